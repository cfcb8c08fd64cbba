"""The fault matrix's cluster proxy pairs: agent-proxy and consumer-proxy (issue 47, item 4).

Both put a real :class:`~cluster_inventory.proxy.ClusterProxy` replica (on the session hub's
reviews) between a consumer and member 0 of the session fleet, whose agent's tunnel code
(:class:`~cluster_inventory.agent.proxy_link.ProxyLink`) holds the tunnel; a Toxiproxy sits
on one path:

- **agent-proxy**: between the agent and the proxy's tunnel endpoint. The agent must notice a
  tunnel that ends or hangs (its WebSocket ping, every ``HEARTBEAT`` s here), say so naming
  the proxy, and dial again; consumers are back once it has.
- **consumer-proxy**: between the consumer and the proxy's CONNECT listener. The proxy and
  the agent's tunnel must be untouched (the tunnel never closes), the consumer's failures
  name where it was going, and its next connection goes through.

The change made during the fault is a ConfigMap created on the member directly; it shows
when the consumer reads it through the proxy. ``up``: the agent's link and the replica
still run, no traceback, and the member's tunnel on the replica is the one the agent holds
(a fault never routes a consumer to a wrong member: the reads are of member 0's objects).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.agent.proxy_link import ProxyLink
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.agents import running
from tests.support.hub.cluster_proxy import RunningProxy, running_proxy
from tests.support.network.faults import (
    TICK_TIMEOUT,
    Cell,
    account,
    distinct,
    fault_window,
    recover,
    said,
    watching,
)
from tests.support.network.toxiproxy import Fault, Front, Toxiproxy
from tests.support.waiting import eventually

#: The agent's WebSocket ping interval (seconds) in these pairs: a hung tunnel is found
#: within about two of them (``agent run`` pings every 30 s, ``ProxyLink``'s default).
HEARTBEAT = 1.0


@dataclass
class _Proxied:
    """Member 0 behind a proxy replica, and what the cell needs of them."""

    name: str
    member: ControlPlane
    proxy: RunningProxy
    link: ProxyLink

    def connection(self, connect_url: str) -> kube.ClusterConnection:
        """The consumer's connection to the member through ``connect_url`` (a CONNECT proxy)."""
        conn = self.member.connection()
        return kube.ClusterConnection(
            server=f"https://{self.name}",
            ca_data=conn.ca_data,
            client_cert_data=conn.client_cert_data,
            client_key_data=conn.client_key_data,
            tls_server_name="127.0.0.1",
            proxy_url=connect_url,
        )


def _wss(front: Front) -> str:
    return front.server.replace("https://", "wss://", 1)


@contextlib.asynccontextmanager
async def _proxied(
    fleet: Fleet, namespace: str, workdir: Path, toxiproxy: Toxiproxy, *, agent_front: bool
) -> AsyncIterator[tuple[_Proxied, Front]]:
    """Member 0 behind a replica; the Toxiproxy front on the agent's path or the consumer's."""
    member = next(iter(fleet.members.values()))
    name = f"px-{namespace[-8:]}"
    async with contextlib.AsyncExitStack() as stack:
        hub = await stack.enter_async_context(await fleet.hub.client())
        rp = await stack.enter_async_context(running_proxy(hub, namespace, workdir))
        upstream = rp.tunnel_url if agent_front else rp.connect_url
        front = await toxiproxy.front(upstream.replace("wss://", "https://"), "proxy")
        stack.push_async_callback(toxiproxy.remove, front)
        acceptance = await accept(hub, namespace, name, ["faults"])
        identity = kube.connection_from_kubeconfig(
            fleet.hub.kubeconfig(acceptance.agent_user, list(acceptance.agent_groups))
        )
        link = ProxyLink(
            name,
            (_wss(front) if agent_front else rp.tunnel_url,),
            member_server=member.server,
            credential=lambda: identity,
            proxy_ca=rp.ca_path.read_bytes(),
            heartbeat=HEARTBEAT,
        )
        task = await stack.enter_async_context(running(link.run()))
        await eventually(lambda: link.connected == 1, what="the agent's tunnel")
        proxied = _Proxied(name, member, rp, link)
        yield proxied, front
        assert not task.done(), "the agent's proxy link ended"


async def _has(client: kube.ApiClient, name: str, namespace: str) -> bool:
    """Whether the consumer reads ConfigMap ``name`` through the proxy now."""
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        await kube.request(client, "GET", path, timeout=TICK_TIMEOUT * 4)
    except kube.KubeError:
        return False
    return True


class _Reads:
    """The consumer's reads through the proxy, one after the other: the cell's ticks."""

    def __init__(self, client: kube.ApiClient) -> None:
        self.client = client
        self.done = 0
        self.failed: list[str] = []

    async def run(self) -> None:
        while True:
            try:
                await kube.request(self.client, "GET", "/version", timeout=TICK_TIMEOUT)
            except kube.KubeError as exc:
                self.failed.append(str(exc))
            self.done += 1
            await asyncio.sleep(0.2)


async def _cell(
    cell: Cell, fleet: Fleet, namespace: str, workdir: Path, toxiproxy: Toxiproxy, fault: Fault
) -> Cell:
    agent_side = cell.pair == "agent-proxy"
    async with _proxied(fleet, namespace, workdir, toxiproxy, agent_front=agent_side) as (
        p,
        front,
    ):
        connect_url = p.proxy.connect_url if agent_side else front.server.replace("https", "http")
        route = p.proxy.proxy.routes.get(p.name)
        async with (
            await kube.new_client(p.connection(connect_url)) as consumer,
            await p.member.client() as direct,
            watching(direct, namespace, kube.CONFIG_MAPS) as logs,
        ):
            marker = f"{namespace}-before"
            await kube.create(
                direct, kube.CONFIG_MAPS, {"metadata": {"name": marker, "namespace": namespace}}
            )
            await eventually(lambda: _has(consumer, marker, namespace), what="steady")
            before = logs[0].snapshot()
            reads = _Reads(consumer)
            with said() as heard:
                async with running(reads.run()):
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines) or bool(reads.failed)

                    cell.noticed = await fault_window(noticed, lambda: reads.done)
                    during = f"{namespace}-during"
                    await kube.create(
                        direct,
                        kube.CONFIG_MAPS,
                        {"metadata": {"name": during, "namespace": namespace}},
                    )
                    await recover(cell, front, lambda: _has(consumer, during, namespace))
            cell.said = distinct(heard.lines) + distinct(reads.failed)
            cell.up = heard.tracebacks == 0 and p.proxy.proxy.ready()
            if not agent_side:
                # The consumer's path broke, not the agent's: its tunnel is the one it was.
                cell.up = cell.up and p.proxy.proxy.routes.get(p.name) is route
            cell.names_server = any(
                front.server.rsplit(":", 1)[1] in line or p.name in line for line in cell.said
            )
            account(cell, logs, before)
    return cell


async def agent_proxy(
    fleet: Fleet, namespace: str, workdir: Path, toxiproxy: Toxiproxy, fault: Fault
) -> Cell:
    """The agent's tunnel to the cluster proxy, broken; consumers read through the proxy."""
    return await _cell(Cell("agent-proxy", fault.name), fleet, namespace, workdir, toxiproxy, fault)


async def consumer_proxy(
    fleet: Fleet, namespace: str, workdir: Path, toxiproxy: Toxiproxy, fault: Fault
) -> Cell:
    """A consumer's connections to the cluster proxy's CONNECT listener, broken."""
    return await _cell(
        Cell("consumer-proxy", fault.name), fleet, namespace, workdir, toxiproxy, fault
    )
