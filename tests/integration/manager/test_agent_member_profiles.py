"""An agent member on the hub: its agent's report becomes ClusterProfiles (docs/agent.md).

The cluster manager is never given a route to the member: the accepted registration has no
kubeconfig, and the only client of the member in this test is the agent's own. The manager
reads the MemberReport and the heartbeat Lease the agent writes with its hub identity, which
may write nothing else.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from cluster_inventory import kube
from cluster_inventory.agent import ReportingAgent, ReportingConfig
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.manager.admin.agents import accept, current_acceptance
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.agents import running
from tests.support.hub.manager import Harness, running_manager
from tests.support.network.faults import watching
from tests.support.waiting import eventually

ADVERTISED = "https://edge-1.example.test:6443"


def _condition(profile: dict[str, Any], ctype: str) -> tuple[str, str]:
    for cond in (profile.get("status") or {}).get("conditions") or ():
        if cond["type"] == ctype:
            return cond["status"], cond["reason"]
    return "", ""


def _properties(profile: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in (profile.get("status") or {}).get("properties") or ()}


@contextlib.asynccontextmanager
async def _agent(
    h: Harness, name: str, member: ControlPlane, server: str = ADVERTISED
) -> AsyncIterator[ReportingAgent]:
    """The member's agent, renewing a 1 s heartbeat, for the length of the block."""
    acceptance = await current_acceptance(h.hub_client, h.namespace, name)
    assert acceptance is not None, f"accept {name} first"
    async with await h.hub.client(acceptance.agent_user, list(acceptance.agent_groups)) as hub:
        config = ReportingConfig(
            name=name,
            namespace=h.namespace,
            server=server,
            lease_duration=1.0,
            probe_interval=0.5,
        )
        agent = ReportingAgent(hub, member.connection(), config)
        try:
            async with running(agent.run()):
                yield agent
        finally:
            await agent.stop()


async def test_an_agent_member_is_profiled_from_its_report_and_its_heartbeat(
    fleet: Fleet, test_namespace: str
) -> None:
    name, member = next(iter(fleet.members.items()))
    prop = f"agent-{uuid.uuid4().hex[:8]}.test.example"
    async with (
        running_manager(fleet, test_namespace, agent_heartbeat_multiple=2.0) as h,
        await member.client() as on_member,
    ):
        inventory = await h.inventory("edge", "edge")
        await accept(h.hub_client, test_namespace, name, ["edge"])

        async def profile() -> dict[str, Any]:
            return await h.profile(inventory, name)

        async def profile_with_health() -> dict[str, Any] | None:
            # A profile is created first and its status written next: wait for the status.
            found = await profile()
            return found if _condition(found, CONDITION_CONTROL_PLANE_HEALTHY)[0] else None

        # Accepted, not reported yet: a profile that says so, and no access provider.
        waiting = await eventually(profile_with_health, what="the accepted member's profile")
        assert _condition(waiting, CONDITION_CONTROL_PLANE_HEALTHY)[1] == "AgentNotReported"
        assert not (waiting.get("status") or {}).get("accessProviders")

        uid = (await kube.get(on_member, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
        body = {"metadata": {"name": prop}, "spec": {"value": "one"}}
        await kube.apply(on_member, kube.CLUSTER_PROPERTIES, body, field_manager="t")
        try:
            async with _agent(h, name, member):

                async def reported() -> dict[str, Any] | None:
                    p = await profile()
                    healthy = _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)[0] == "True"
                    return p if healthy and _properties(p).get(prop) == "one" else None

                p = await eventually(reported, what="the agent's report on the profile")
                assert p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == uid
                assert _condition(p, CONDITION_JOINED) == ("True", "AgentReporting")
                assert (p["status"].get("version") or {}).get("kubernetes", "").startswith("v1.")
                [provider] = p["status"]["accessProviders"]
                assert provider["cluster"]["server"] == ADVERTISED

                body["spec"] = {"value": "two"}
                await kube.apply(on_member, kube.CLUSTER_PROPERTIES, body, field_manager="t")

                async def changed() -> bool:
                    return _properties(await profile()).get(prop) == "two"

                await eventually(changed, what="the property change on the profile")

            # The agent stopped: after 2 x its 1 s lease the member is Unknown, and keeps
            # what it last reported.
            async def stale() -> dict[str, Any] | None:
                p = await profile()
                return p if _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)[0] == "Unknown" else None

            p = await eventually(stale, timeout=15, what="the stale heartbeat on the profile")
            assert _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)[1] == "AgentHeartbeatStale"
            assert _properties(p).get(prop) == "two"
            assert p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == uid

            async with _agent(h, name, member):
                await eventually(_healthy(profile), what="healthy again on a new heartbeat")
        finally:
            await kube.delete(on_member, kube.CLUSTER_PROPERTIES, prop)
        # The manager never dialled the member: its only token Secret would say so.
        assert not [
            s
            for s in (await kube.list_objects(h.hub_client, kube.SECRETS, inventory))["items"]
            if s["metadata"]["name"] == name
        ]


def _healthy(profile: Any) -> Any:
    async def probe() -> bool:
        return _condition(await profile(), CONDITION_CONTROL_PLANE_HEALTHY)[0] == "True"

    return probe


async def test_one_member_reached_by_an_agent_and_a_kubeconfig_gets_one_profile(
    fleet: Fleet, test_namespace: str
) -> None:
    """Member-id dedupe holds across both kinds: a second claim is reported, never merged."""
    member = next(iter(fleet.members.values()))
    async with running_manager(fleet, test_namespace) as h:
        inventory = await h.inventory("dup", "dup")
        await accept(h.hub_client, test_namespace, "by-agent", ["dup"])
        await h.register("by-kubeconfig", member, ["dup"])
        async with _agent(h, "by-agent", member):

            async def one_profile_and_a_report() -> list[dict[str, Any]] | None:
                names = await h.profile_names(inventory)
                events = await kube.list_objects(
                    h.hub_client,
                    kube.EVENTS,
                    test_namespace,
                    field_selector="reason=DuplicateMember",
                )
                return events["items"] if len(names) == 1 and events["items"] else None

            [event] = await eventually(one_profile_and_a_report, what="one profile, one Event")
            [kept] = await h.profile_names(inventory)
            left_out = ({"by-agent", "by-kubeconfig"} - {kept}).pop()
            assert event["regarding"]["name"] == left_out
            assert event["type"] == "Warning"


async def test_a_second_agent_claiming_a_member_id_is_reported_and_never_takes_the_profile(
    fleet: Fleet, test_namespace: str
) -> None:
    """Two accepted agent members whose agents report one member id: one profile, never merged.

    The second agent runs against the same member cluster (so reports the same
    ``kube-system`` UID), advertises another server, and its name sorts first (the order in
    which the rule "first by name" alone handed it the profile): the profile keeps the first
    one's name, uid, member id and server through the whole claim, no other profile ever
    carries the member id, and the second registration gets a ``DuplicateMember`` Warning
    Event.
    """
    member = next(iter(fleet.members.values()))
    first, second = "edge-z", "edge-a"
    async with running_manager(fleet, test_namespace) as h, await member.client() as on_member:
        uid = (await kube.get(on_member, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
        inventory = await h.inventory("twins", "twins")
        await accept(h.hub_client, test_namespace, first, ["twins"])
        async with _agent(h, first, member):

            async def reported() -> dict[str, Any] | None:
                p = await h.profile(inventory, first)
                healthy = _condition(p, CONDITION_CONTROL_PLANE_HEALTHY)[0] == "True"
                return (
                    p
                    if healthy and p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == uid
                    else None
                )

            kept = await eventually(reported, what="the first agent's profile")
            async with watching(h.hub_client, inventory, kube.CLUSTER_PROFILES) as [profiles]:
                seen: list[tuple[str, str, str, str | None]] = []
                profiles.informer.add_handler(
                    lambda event, obj, _old: seen.append(
                        (
                            event,
                            obj["metadata"]["name"],
                            obj["metadata"]["labels"].get(LABEL_INVENTORY_MEMBER_ID, ""),
                            _server(obj),
                        )
                    )
                )
                await accept(h.hub_client, test_namespace, second, ["twins"])
                async with _agent(h, second, member, server="https://impostor.example.test"):

                    async def reported_once() -> list[dict[str, Any]] | None:
                        events = await kube.list_objects(
                            h.hub_client,
                            kube.EVENTS,
                            test_namespace,
                            field_selector="reason=DuplicateMember",
                        )
                        names = await h.profile_names(inventory)
                        return events["items"] if names == {first} and events["items"] else None

                    [event] = await eventually(reported_once, what="one profile, one Event")
                    assert event["regarding"]["name"] == second
                    assert event["type"] == "Warning"
                    assert uid in event["note"]
                    now = await h.profile(inventory, first)
            assert now["metadata"]["uid"] == kept["metadata"]["uid"]
            assert now["metadata"]["labels"] == kept["metadata"]["labels"]
            assert _server(now) == ADVERTISED
            # The first agent's profile never left it; the second's (made before its agent
            # reported, under a fallback id) never carried the member id.
            mine = [s for s in seen if s[1] == first]
            assert all(s[0] != "DELETED" and s[3] == ADVERTISED for s in mine), mine
            assert not [s for s in seen if s[1] != first and s[2] == uid], seen


def _server(profile: dict[str, Any]) -> str | None:
    providers = (profile.get("status") or {}).get("accessProviders") or ()
    return providers[0]["cluster"]["server"] if providers else None
