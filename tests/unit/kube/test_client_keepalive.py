"""A client keeps idle connections for the keep-alive it was given, and so does its clone."""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.testing import CertificateAuthority

CONN = kube.ClusterConnection(
    server="https://127.0.0.1:1", ca_data=CertificateAuthority("unit-test-ca").cert_pem
)


def _keepalive(client: kube.ApiClient) -> float:
    return client.rest_client.pool_manager.connector._keepalive_timeout  # type: ignore[no-any-return]


async def test_aiohttps_keepalive_by_default() -> None:
    client = await kube.new_client(CONN)
    try:
        assert _keepalive(client) == 15.0
    finally:
        await client.close()


async def test_a_short_keepalive_is_kept_by_the_clone() -> None:
    client = await kube.new_client(CONN, keepalive_timeout=2.0)
    clone = await kube.clone_client(client)
    try:
        assert _keepalive(client) == 2.0
        assert _keepalive(clone) == 2.0
    finally:
        await clone.close()
        await client.close()
