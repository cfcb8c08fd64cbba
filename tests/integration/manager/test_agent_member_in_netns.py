"""An agent member the manager truly cannot reach, and its consumers through a tunnel.

The member's etcd, kube-apiserver and agent run in a network namespace of the test's own
(``tests/support/network/netns.py``): its ``127.0.0.1`` is not the host's, so neither the cluster manager nor
the test process can open a connection to it. The agent reaches the hub through a Unix-socket
bridge; consumers reach the member only through the forward proxy its agent advertises
(``--proxy-url``), as they would through a tunnel the user runs (``docs/agent.md``).
"""

from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import Fleet, ManagedProcess
from tests.support.hub.manager import running_manager
from tests.support.network.netns import NetnsMember, edge_proxy, netns_member, tunnels
from tests.support.network.proxies import hostport
from tests.support.waiting import eventually

LEASE = 1  # s, the agent's --lease-duration
MULTIPLE = 2.0  # the manager's agent_heartbeat_multiple
JITTER = 0.25  # a renewal comes every LEASE x (1 +/- JITTER) (agent/heartbeat.py)


def _condition(profile: dict[str, Any], ctype: str) -> tuple[str, str]:
    for cond in (profile.get("status") or {}).get("conditions") or ():
        if cond["type"] == ctype:
            return cond["status"], cond["reason"]
    return "", ""


def _consumer(cluster: dict[str, Any], ns: NetnsMember, *, via_proxy: bool = True) -> Any:
    """A consumer's connection: the access provider's cluster, the member's admin credential.

    The credential is the member's admin client certificate (the agent-kept consumer
    credential is another change); everything else is what the profile says.
    """
    admin = yaml.safe_load(ns.kubeconfig_path.read_text())
    entry = {k: v for k, v in cluster.items() if k != "extensions"}
    if not via_proxy:
        entry.pop("proxy-url", None)
    return kube.connection_from_kubeconfig(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "member", "cluster": entry}],
            "users": admin["users"],
            "contexts": [
                {
                    "name": "member",
                    "context": {"cluster": "member", "user": admin["users"][0]["name"]},
                }
            ],
            "current-context": "member",
        }
    )


async def _until(probe: Any, agent: ManagedProcess, what: str, timeout: float = 30) -> Any:
    """``eventually``, with the agent's last output when it times out."""
    try:
        return await eventually(probe, timeout=timeout, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nthe agent's last output:\n{agent.log_tail(30)}") from None


async def test_a_member_in_its_own_network_namespace_reports_and_is_reached_through_its_tunnel(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    name = "edge-netns"
    prop = f"netns-{uuid.uuid4().hex[:8]}.test.example"
    hub_kubeconfig = tmp_path / "agent-hub.yaml"
    async with (
        netns_member(fleet.hub) as ns,
        running_manager(fleet, test_namespace, agent_heartbeat_multiple=MULTIPLE) as h,
    ):
        inventory = await h.inventory("edge", "edge")
        acceptance = await accept(
            h.hub_client, test_namespace, name, ["edge"], lease_duration=LEASE
        )
        groups = list(acceptance.agent_groups)
        hub_kubeconfig.write_text(
            yaml.safe_dump(fleet.hub.kubeconfig(acceptance.agent_user, groups))
        )

        def start_agent(scheme: str) -> ManagedProcess:
            return ns.start_agent(
                name, "--hub-kubeconfig", str(hub_kubeconfig), "-n", test_namespace,
                "--server", ns.server, "--ca-file", str(ns.ca_path),
                "--proxy-url", edge_proxy(ns, scheme), "--lease-duration", str(LEASE),
                "--probe-interval", "0.5",
            )  # fmt: skip

        def healthy_through(scheme: str) -> Any:
            async def probe() -> dict[str, Any] | None:
                p = await h.profile(inventory, name)
                providers = (p.get("status") or {}).get("accessProviders") or ()
                if _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)[0] != "True" or not providers:
                    return None
                return (
                    p
                    if providers[0]["cluster"].get("proxy-url") == edge_proxy(ns, scheme)
                    else None
                )

            return probe

        agent = start_agent("http")
        p = await _until(healthy_through("http"), agent, "the member joined")
        [provider] = p["status"]["accessProviders"]
        cluster = provider["cluster"]
        assert cluster["server"] == ns.server
        assert base64.b64decode(cluster["certificate-authority-data"]) == ns.ca_path.read_bytes()

        # Without the tunnel, the advertised address is the host's loopback: nothing there
        # (refused), or another server (its certificate fails the member's CA). Status 0:
        # no HTTP answer at all.
        async with await kube.new_client(_consumer(cluster, ns, via_proxy=False)) as direct:
            with pytest.raises(kube.ServerUnavailableError) as unreachable:
                await kube.get(direct, kube.NAMESPACES, "kube-system")
        assert unreachable.value.status == 0

        # Through it, a consumer reads and writes the member; the ClusterProperty it writes
        # inside the namespace reaches the profile.
        async with await kube.new_client(_consumer(cluster, ns)) as consumer:
            uid = (await kube.get(consumer, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
            body = {"metadata": {"name": prop}, "spec": {"value": "through-the-tunnel"}}
            await kube.apply(consumer, kube.CLUSTER_PROPERTIES, body, field_manager="t")
        assert hostport(ns.server) in tunnels(ns, "http")
        assert p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == uid

        async def property_reported() -> bool:
            status = (await h.profile(inventory, name)).get("status") or {}
            values = {q["name"]: q["value"] for q in status.get("properties") or ()}
            return values.get(prop) == "through-the-tunnel"

        await eventually(property_reported, what="the ClusterProperty on the profile")

        # SIGKILL: nothing says goodbye; the heartbeat goes stale on the manager's clock.
        killed = time.monotonic()
        await agent.stop(kill=True)

        async def stale() -> str:
            p = await h.profile(inventory, name)
            status, reason = _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)
            return reason if status == "Unknown" else ""

        limit = LEASE * MULTIPLE
        reason = await eventually(stale, timeout=limit + 5, what="the stale heartbeat")
        elapsed = time.monotonic() - killed
        assert reason == "AgentHeartbeatStale"
        # The last renewal seen came at most LEASE x (1 + JITTER) before the kill.
        assert limit - LEASE * (1 + JITTER) <= elapsed <= limit + 2, elapsed

        # Restarted with the same identity, now advertising the SOCKS5 tunnel: healthy again.
        agent = start_agent("socks5")
        p = await _until(healthy_through("socks5"), agent, "healthy again")
        [provider] = p["status"]["accessProviders"]
        async with await kube.new_client(_consumer(provider["cluster"], ns)) as consumer:
            await kube.delete(consumer, kube.CLUSTER_PROPERTIES, prop)
        assert hostport(ns.server) in tunnels(ns, "socks5")
