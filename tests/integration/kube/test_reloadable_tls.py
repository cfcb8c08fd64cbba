"""A :class:`kube.ReloadableTLSContext` takes a new client certificate for new connections.

The member agent's hub clients hold one: a rotated certificate is used without rebuilding
them, by the client and by its clones (the heartbeat's, on the Lease loop).
"""

from __future__ import annotations

from dataclasses import replace

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane
from tests.support.hub.agents import self_subject


async def test_a_reloaded_certificate_is_presented_by_new_connections(hub: ControlPlane) -> None:
    first, second = hub.connection("rotating-one"), hub.connection("rotating-two")
    tls = kube.ReloadableTLSContext(first)
    bare = replace(first, client_cert_data=None, client_key_data=None)
    async with await kube.new_client(bare, ssl_context=tls) as client:
        assert (await self_subject(client))["username"] == "rotating-one"
        tls.reload(second)
        async with await kube.clone_client(client) as clone:
            assert (await self_subject(clone))["username"] == "rotating-two"
    async with await kube.new_client(bare, ssl_context=tls) as fresh:
        assert (await self_subject(fresh))["username"] == "rotating-two"
