"""The hub out of reach for a while: the reporter keeps the latest state and writes it after.

The agent reaches the hub through a Toxiproxy (``tests/support/network/toxiproxy.py``); the proxy is
disabled (connections refused) while a property changes twice on the member, then enabled.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from cluster_inventory import kube
from cluster_inventory.agent import MemberReporter
from tests.support.hub.agents import Accepted, running
from tests.support.network.toxiproxy import FAULTS, Toxiproxy
from tests.support.waiting import eventually


def _value(report: dict[str, Any], prop: str) -> str | None:
    for entry in (report.get("status") or {}).get("properties") or ():
        if entry["name"] == prop:
            return str(entry["value"])
    return None


async def test_the_latest_state_reaches_the_hub_once_it_answers_again(
    accepted: Accepted, toxiproxy: Toxiproxy, fleet
) -> None:
    front = await toxiproxy.front(fleet.hub.server, "agent-hub")
    identity = fleet.hub.connection(accepted.user, accepted.groups)
    prop = f"agent-outage-{uuid.uuid4().hex[:8]}.test.example"
    body: dict[str, Any] = {"metadata": {"name": prop}}
    try:
        hub = await kube.new_client(dataclasses.replace(identity, server=front.server))
        async with hub, await accepted.member.client() as member:
            reporter = MemberReporter(
                hub, member, name=accepted.name, namespace=accepted.namespace, probe_interval=1.0
            )
            async with running(reporter.run()) as task:
                await eventually(
                    lambda: reporter.writes >= 1 and not reporter.pending, what="first report"
                )
                await front.inject(FAULTS["disabled"])
                for value in ("during-1", "during-2"):
                    body["spec"] = {"value": value}
                    await kube.apply(member, kube.CLUSTER_PROPERTIES, body, field_manager="t")
                    await eventually(
                        lambda v=value: (
                            (reporter.view.properties or {}).get(prop)
                            and reporter.view.properties[prop].value == v
                        ),
                        what=f"the reporter sees {value}",
                    )
                failures = reporter.write_failures
                await eventually(
                    lambda: reporter.write_failures > failures, what="a write the hub refused"
                )
                assert _value(await accepted.report(), prop) is None
                await front.heal()

                async def latest() -> bool:
                    return _value(await accepted.report(), prop) == "during-2"

                await eventually(latest, timeout=30, what="the latest value on the hub")
                assert not task.done()
    finally:
        await front.heal()
        await toxiproxy.remove(front)
        async with await accepted.member.client() as member:
            await kube.delete(member, kube.CLUSTER_PROPERTIES, prop)


async def test_an_unreachable_member_api_server_is_reported_as_the_manager_reports_it(
    accepted: Accepted, toxiproxy: Toxiproxy
) -> None:
    front = await toxiproxy.front(accepted.member.server, "agent-member")
    connection = dataclasses.replace(accepted.member.connection(), server=front.server)

    async def health() -> dict[str, Any]:
        return ((await accepted.report()).get("status") or {}).get("apiServerHealth") or {}

    try:
        async with await kube.new_client(connection) as member:
            reporter = MemberReporter(
                accepted.hub,
                member,
                name=accepted.name,
                namespace=accepted.namespace,
                # Longer than the test: the break and the recovery are noticed through the
                # property watch and the quick re-probes, not the interval.
                probe_interval=300.0,
                probe_timeout=2.0,
            )
            async with running(reporter.run()):
                await eventually(lambda: _is(health(), "True"), what="the member reported healthy")
                await front.inject(FAULTS["disabled"])
                down = await eventually(lambda: _is(health(), "False"), what="reported down")
                # ControlPlaneHealthy's reason for the same failure (kube.probes.probe_failure).
                assert down["reason"] == "APIServerUnreachable", down
                assert front.server in down["message"]
                await front.heal()
                await eventually(lambda: _is(health(), "True"), what="reported healthy again")
    finally:
        await front.heal()
        await toxiproxy.remove(front)


async def _is(health: Any, status: str) -> dict[str, Any] | None:
    found = await health
    return found if found.get("status") == status else None
