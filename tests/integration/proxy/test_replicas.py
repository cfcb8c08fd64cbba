"""Two proxy replicas: an agent holds a tunnel to each; a replica gone costs a reconnect only.

Two members of the session fleet, each with its agent's tunnel code (``agent/proxy_link.py``)
holding a tunnel to both replicas (``server_count`` 2), on the real hub's reviews. A consumer
through either replica reaches the member it names and no other (its ``kube-system`` UID);
replica a stopped, consumers go on through b at once and each agent keeps its tunnel there
while it dials a again; a started again on its port, each agent holds both again.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.agent.proxy_link import ProxyLink
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.agents import running
from tests.support.hub.cluster_proxy import RunningProxy, running_proxy
from tests.support.waiting import eventually


async def _uid_through(proxy: RunningProxy, name: str, member: ControlPlane) -> str:
    conn = member.connection()
    behind = kube.ClusterConnection(
        server=f"https://{name}",
        ca_data=conn.ca_data,
        client_cert_data=conn.client_cert_data,
        client_key_data=conn.client_key_data,
        tls_server_name="127.0.0.1",
        proxy_url=proxy.connect_url,
    )
    async with await kube.new_client(behind) as client:
        return str((await kube.get(client, kube.NAMESPACES, "kube-system"))["metadata"]["uid"])


async def test_each_agent_holds_every_replica_and_a_lost_replica_costs_a_reconnect(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    members = dict(list(fleet.members.items())[:2])
    uids = {}
    for name, member in members.items():
        async with await member.client() as admin:
            uids[name] = (await kube.get(admin, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
    async with contextlib.AsyncExitStack() as stack:
        hub = await stack.enter_async_context(await fleet.hub.client())
        a = await stack.enter_async_context(
            running_proxy(hub, test_namespace, tmp_path / "a", server_id="a", server_count=2)
        )
        b = await stack.enter_async_context(
            running_proxy(hub, test_namespace, tmp_path / "b", server_id="b", server_count=2)
        )
        # Both replicas' CAs: the agents trust each (one bundle, as a chart's would be).
        bundle = a.ca_path.read_bytes() + b.ca_path.read_bytes()
        links = {}
        for name, member in members.items():
            acceptance = await accept(hub, test_namespace, name, ["edge"])
            identity = kube.connection_from_kubeconfig(
                fleet.hub.kubeconfig(acceptance.agent_user, list(acceptance.agent_groups))
            )
            link = ProxyLink(
                name,
                (a.tunnel_url, b.tunnel_url),
                member_server=member.server,
                credential=lambda identity=identity: identity,
                proxy_ca=bundle,
            )
            links[name] = link
            await stack.enter_async_context(running(link.run()))
        await eventually(
            lambda: all(sorted(link.tunnels) == ["a", "b"] for link in links.values()),
            what="each agent holds both replicas",
        )
        for proxy in (a, b):
            for name, member in members.items():
                assert await _uid_through(proxy, name, member) == uids[name]  # never another

        # Replica a gone: consumers through b at once; the agents keep b and redial a.
        tunnel_port = a.proxy.tunnel_port
        await a.proxy.stop()
        await eventually(
            lambda: all(sorted(link.tunnels) == ["b"] for link in links.values()),
            what="the agents saw replica a go",
        )
        for name, member in members.items():
            assert await _uid_through(b, name, member) == uids[name]

        # Replica a back on its port: each agent holds both again.
        again = await stack.enter_async_context(
            running_proxy(
                hub,
                test_namespace,
                tmp_path / "a",
                server_id="a",
                server_count=2,
                tunnel_port=tunnel_port,
                reuse_ca=True,
            )
        )
        await eventually(
            lambda: all(sorted(link.tunnels) == ["a", "b"] for link in links.values()),
            timeout=60,
            what="each agent holds both replicas again",
        )
        for name, member in members.items():
            assert await _uid_through(again, name, member) == uids[name]
