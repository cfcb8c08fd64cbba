"""The hub down for 30 s loses nothing, and no agent member turns Unknown for it (issue 33).

The cluster manager and the member's agent each reach the hub through a Toxiproxy
(``tests/support/network/toxiproxy.py``); both are disabled for 30 s: neither can read nor write, and the
agent's 2 s heartbeat (stale after 2 s x 3 on the manager's clock) goes unrenewed far longer
than that. The hub comes back to the manager first and to the agent once the manager reads
the Leases again: the order in which a manager that counted its own blindness against the
agent would call the member stale before the agent's retry gets through. Our own blindness
is never evidence against a member (docs/agent.md, "The hub side"). The test watches the
profile and the MemberReport through a direct hub connection, which the outage does not cut,
and reads the manager's own verdicts (its health-transition counter): a stale verdict made
while blind reaches the profile only if the manager's status write is retried before the
agent's renewal is seen, which its backoff usually spares.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.agent import ReportingAgent, ReportingConfig
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
)
from cluster_inventory.api.views import parse_time
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import Fleet
from tests.support.hub.agents import running
from tests.support.hub.manager import running_manager
from tests.support.network.faults import watching
from tests.support.network.toxiproxy import FAULTS, Front, Toxiproxy
from tests.support.waiting import eventually

#: The outage the issue names: the one wait of this test that is not for an event.
OUTAGE = 30.0


def _healthy(profile: dict[str, Any]) -> tuple[str, str]:
    for cond in (profile.get("status") or {}).get("conditions") or ():
        if cond["type"] == CONDITION_CONTROL_PLANE_HEALTHY:
            return cond["status"], cond["reason"]
    return "", ""


def _property(profile: dict[str, Any], name: str) -> str | None:
    for prop in (profile.get("status") or {}).get("properties") or ():
        if prop["name"] == name:
            return str(prop["value"])
    return None


def _rv(obj: dict[str, Any] | None) -> str | None:
    return (obj or {}).get("metadata", {}).get("resourceVersion")


def _renewed_since(lease: dict[str, Any] | None, since: dt.datetime) -> bool:
    renewed = parse_time(((lease or {}).get("spec") or {}).get("renewTime"))
    return renewed is not None and renewed > since


def _turned_unknown(registry: CollectorRegistry) -> float:
    """How often the manager's own verdict on a member turned Unknown (its counter, every
    member's)."""
    return sum(
        sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == "cluster_inventory_member_health_transitions_total"
        and sample.labels.get("status") == "Unknown"
    )


@contextlib.asynccontextmanager
async def _fronts(toxiproxy: Toxiproxy, server: str, *labels: str) -> AsyncIterator[list[Front]]:
    fronts = [await toxiproxy.front(server, label) for label in labels]
    try:
        yield fronts
    finally:
        for front in fronts:
            await front.heal()
            await toxiproxy.remove(front)


async def test_the_hub_down_for_30_s_loses_nothing_and_turns_no_member_unknown(
    fleet: Fleet, test_namespace: str, toxiproxy: Toxiproxy
) -> None:
    name, member = next(iter(fleet.members.items()))
    prop = f"hub-down-{uuid.uuid4().hex[:8]}.test.example"
    body = {"metadata": {"name": prop}, "spec": {"value": "set-while-down"}}
    async with (
        _fronts(toxiproxy, fleet.hub.server, "hub-down-manager", "hub-down-agent") as fronts,
        await kube.new_client(
            dataclasses.replace(fleet.hub.connection(), server=fronts[0].server)
        ) as manager_hub,
        running_manager(
            fleet, test_namespace, manager_hub=manager_hub, agent_heartbeat_multiple=3.0
        ) as h,
        contextlib.AsyncExitStack() as stack,
        await member.client() as on_member,
    ):
        to_manager, to_agent = fronts
        inventory = await h.inventory("hubdown", "hubdown")
        acceptance = await accept(h.hub_client, test_namespace, name, ["hubdown"])
        agent_identity = fleet.hub.connection(acceptance.agent_user, list(acceptance.agent_groups))
        hub = await stack.enter_async_context(
            await kube.new_client(dataclasses.replace(agent_identity, server=fronts[1].server))
        )
        config = ReportingConfig(
            name=name, namespace=test_namespace, lease_duration=2.0, probe_interval=0.5
        )
        agent = ReportingAgent(hub, member.connection(), config)
        leases = h.manager.agents.leases
        try:
            async with running(agent.run()) as task:

                async def steady() -> dict[str, Any] | None:
                    p = await h.profile(inventory, name)
                    return p if _healthy(p)[0] == "True" else None

                before = await eventually(steady, what="the agent member healthy")
                async with (
                    watching(h.hub_client, inventory, kube.CLUSTER_PROFILES) as [profiles],
                    watching(h.hub_client, test_namespace, kube.MEMBER_REPORTS) as [reports],
                ):
                    seen: list[tuple[str, str, str]] = []
                    profiles.informer.add_handler(
                        lambda event, obj, _old: seen.append((event, *_healthy(obj)))
                    )
                    unknown = _turned_unknown(h.manager.registry)
                    for front in fronts:
                        await front.inject(FAULTS["disabled"])
                    cut = time.monotonic()
                    await kube.apply(on_member, kube.CLUSTER_PROPERTIES, body, field_manager="t")
                    await eventually(lambda: leases.failure is not None, what="the manager blind")
                    await eventually(
                        lambda: agent.reporter is not None and agent.reporter.pending,
                        what="the agent holding its change",
                    )
                    await asyncio.sleep(max(0.0, cut + OUTAGE - time.monotonic()))
                    await to_manager.heal()
                    healed = time.monotonic()
                    await eventually(lambda: leases.failure is None, what="the manager reading")
                    await to_agent.heal()
                    healed_at = dt.datetime.now(dt.UTC)

                    async def recovered() -> dict[str, Any] | None:
                        p = await h.profile(inventory, name)
                        shown = _property(p, prop) == "set-while-down"
                        return p if shown and _healthy(p)[0] == "True" else None

                    await eventually(recovered, timeout=30, what="the change on the profile")
                    recovery = time.monotonic() - healed
                    # Once the manager has seen a renewal made after the agent's heal, any
                    # verdict of its blindness is written; the direct watch then catches up
                    # with the profile as it is.
                    await eventually(
                        lambda: _renewed_since(leases.get(f"{test_namespace}/{name}"), healed_at),
                        what="the manager seeing a renewal after the outage",
                    )
                    after = await h.profile(inventory, name)
                    key = f"{inventory}/{name}"
                    await eventually(
                        lambda: _rv(profiles.informer.get(key)) == _rv(after),
                        what="the direct watch caught up",
                    )
                assert not task.done()
                # Not even in memory, where the status writes' backoff could hide it.
                assert _turned_unknown(h.manager.registry) == unknown, "the manager's verdict"
        finally:
            await agent.stop()
            await kube.delete(on_member, kube.CLUSTER_PROPERTIES, prop)
    assert after["metadata"]["uid"] == before["metadata"]["uid"], "the profile was recreated"
    assert _healthy(after) == ("True", "APIServerReady")
    assert not [s for s in seen if s[0] == "DELETED" or s[1] != "True"], seen
    assert profiles.noops == [] and reports.noops == [], (profiles.noops, reports.noops)
    assert profiles.recreated == [] and reports.recreated == []
    print(f"hub down {OUTAGE:.0f} s; the change on the profile {recovery:.1f} s after")
