"""``kube.new_client`` builds one REST client per ApiClient, not a second one to throw away."""

from __future__ import annotations

import ssl

import pytest

from cluster_inventory import kube
from cluster_inventory.kube._client import _ApiClient
from cluster_inventory.kube._k8s import ApiClient, Configuration
from cluster_inventory.testing._certs import CertificateAuthority

# A CA of its own: with none, the system bundle is what the connection asks for.
CONN = kube.ClusterConnection(
    server="https://127.0.0.1:1", ca_data=CertificateAuthority("unit-test-ca").cert_pem
)


async def test_our_api_client_has_every_attribute_the_library_sets() -> None:
    # _ApiClient re-states ApiClient.__init__ without its REST client: if a library upgrade
    # adds an attribute there, this fails instead of a request failing later.
    library = ApiClient(configuration=Configuration(host="https://127.0.0.1:1"))
    try:
        ours = await kube.new_client(CONN)
        try:
            assert isinstance(ours, _ApiClient)
            assert set(vars(ours)) == set(vars(library))
        finally:
            await ours.close()
    finally:
        await library.close()


async def test_no_system_ca_bundle_is_loaded_per_client(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[object] = []
    real = ssl.SSLContext.load_default_certs

    def spy(self: ssl.SSLContext, *args: object) -> None:
        loaded.append(self)
        real(self, *args)

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", spy)
    client = await kube.new_client(CONN)
    await client.close()
    assert loaded == []
