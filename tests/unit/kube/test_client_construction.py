"""``kube.new_client`` builds one REST client per ApiClient, not a second one to throw away."""

from __future__ import annotations

import ssl

import pytest

from cluster_inventory import kube
from cluster_inventory.kube._k8s import ApiClient, Configuration
from cluster_inventory.kube._proxy import environment_proxy
from cluster_inventory.kube._transport import _ApiClient
from cluster_inventory.testing import CertificateAuthority

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


@pytest.mark.parametrize(
    ("env", "server", "expected"),
    [
        ({}, "https://10.0.0.1:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://10.0.0.1:6443", "http://proxy:3128"),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.0.0.1"},
            "https://10.0.0.1:6443",
            None,
        ),
        (
            {"https_proxy": "http://proxy:3128", "no_proxy": ".example.com"},
            "https://api.example.com",
            None,
        ),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://10.0.0.1:6443", None),
    ],
)
def test_the_environment_proxy_is_resolved_once_as_client_go_does(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], server: str, expected: str | None
) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert environment_proxy(server) == expected


async def test_requests_never_read_netrc(monkeypatch: pytest.MonkeyPatch) -> None:
    client = await kube.new_client(CONN)
    try:
        assert client.rest_client.pool_manager.trust_env is False
    finally:
        await client.close()
