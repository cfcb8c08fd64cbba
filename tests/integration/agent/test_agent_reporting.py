"""The agent's reporter on a real member and a real hub, with the agent's own hub identity.

The reporter writes the MemberReport status (member id, version, health, properties, what
the member advertises), follows ClusterProperty changes, and writes nothing while the
member stays as it was, across probes and across a restart. It owns the whole status: what
another field manager wrote there is gone after its restart.
"""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

import pytest

from cluster_inventory import __version__, kube
from cluster_inventory.agent import MemberNotAcceptedError, MemberReporter
from cluster_inventory.agent.report import advertised
from cluster_inventory.api.constants import FIELD_MANAGER_AGENT
from cluster_inventory.api.member_report import MemberReport
from tests.support.hub.agents import Accepted, running
from tests.support.waiting import eventually

PROXY = "socks5://127.0.0.1:1080"


def _reporter(accepted: Accepted, member: kube.ApiClient, **options: Any) -> MemberReporter:
    options.setdefault("probe_interval", 0.5)
    return MemberReporter(
        accepted.hub,
        member,
        name=accepted.name,
        namespace=accepted.namespace,
        access=advertised(accepted.member.server, accepted.member.ca_pem, PROXY),
        **options,
    )


def _properties(report: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in (report.get("status") or {}).get("properties") or ()}


async def test_report_carries_member_id_version_and_health(accepted: Accepted) -> None:
    async with await accepted.member.client() as member:
        uid = (await kube.get(member, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
        version = (await kube.request(member, "GET", "/version"))["gitVersion"]
        async with running(_reporter(accepted, member).run()):
            report = await eventually(
                lambda: _with_status(accepted, "memberID"), what="the first report"
            )
    status = MemberReport.from_dict(report).status
    assert status is not None and status.api_server_health is not None
    assert status.member_id == uid
    assert status.kubernetes_version == version
    assert status.api_server_health.status == "True"
    assert status.api_server_health.reason == "APIServerReady"
    assert status.server == accepted.member.server
    assert base64.b64decode(status.certificate_authority_data or "") == accepted.member.ca_pem
    assert status.proxy_url == PROXY
    assert status.agent_version == __version__
    owners = {(f["manager"], f.get("subresource")) for f in report["metadata"]["managedFields"]}
    assert (FIELD_MANAGER_AGENT, "status") in owners


async def _with_status(accepted: Accepted, key: str) -> dict[str, Any] | None:
    report = await accepted.report()
    return report if (report.get("status") or {}).get(key) else None


async def test_property_changes_reach_the_report(accepted: Accepted) -> None:
    prop = f"agent-{uuid.uuid4().hex[:8]}.test.example"
    body = {"metadata": {"name": prop}, "spec": {"value": "one"}}
    async with await accepted.member.client() as member:
        reporter = _reporter(accepted, member, probe_interval=30.0)
        try:
            async with running(reporter.run()):
                await eventually(lambda: _with_status(accepted, "memberID"), what="first report")
                seen = []
                for value in ("one", "two", None):
                    started = time.monotonic()
                    if value is None:
                        await kube.delete(member, kube.CLUSTER_PROPERTIES, prop)
                    else:
                        body["spec"] = {"value": value}
                        await kube.apply(member, kube.CLUSTER_PROPERTIES, body, field_manager="t")

                    async def shows(expected: str | None = value) -> bool:
                        return _properties(await accepted.report()).get(prop) == expected

                    await eventually(shows, timeout=10, what=f"property {prop}={value}")
                    seen.append(time.monotonic() - started)
        finally:
            await kube.delete(member, kube.CLUSTER_PROPERTIES, prop)
    # A change reaches the hub after the coalescing delay, not after a probe interval (30 s).
    assert max(seen) < 5, seen


async def test_an_unchanged_member_causes_no_report_write(accepted: Accepted) -> None:
    async with await accepted.member.client() as member:
        first = _reporter(accepted, member, probe_interval=0.2)
        async with running(first.run()):
            await eventually(lambda: _with_status(accepted, "memberID"), what="first report")
            await eventually(
                lambda: first.writes and not first.pending, what="the first write done"
            )
            before = (await accepted.report())["metadata"]["resourceVersion"]
            writes, probes = first.writes, first.probes
            await eventually(lambda: first.probes >= probes + 6, what="six more probes")
            assert first.writes == writes
            assert (await accepted.report())["metadata"]["resourceVersion"] == before
        # A restarted agent finds its last report on the hub and writes nothing either.
        second = _reporter(accepted, member, probe_interval=0.2)
        async with running(second.run()):
            await eventually(lambda: second.probes >= 4, what="the restarted agent's probes")
            assert second.writes == 0
            assert (await accepted.report())["metadata"]["resourceVersion"] == before


async def test_a_missing_report_says_the_member_is_not_accepted(accepted: Accepted) -> None:
    await kube.delete(accepted.admin, kube.MEMBER_REPORTS, accepted.name, accepted.namespace)
    async with await accepted.member.client() as member:
        reporter = _reporter(accepted, member)
        with pytest.raises(MemberNotAcceptedError, match=f"member {accepted.name} is not accepted"):
            await reporter.start()
        await reporter.stop()


async def test_a_burst_of_property_changes_is_written_together(accepted: Accepted) -> None:
    names = [f"agent-burst-{i:02d}-{uuid.uuid4().hex[:6]}.test.example" for i in range(20)]
    async with await accepted.member.client() as member:
        reporter = _reporter(accepted, member, probe_interval=30.0)
        try:
            async with running(reporter.run()):
                await eventually(
                    lambda: reporter.writes and not reporter.pending, what="the first write"
                )
                writes = reporter.writes
                for name in names:
                    body = {"metadata": {"name": name}, "spec": {"value": "v"}}
                    await kube.apply(member, kube.CLUSTER_PROPERTIES, body, field_manager="t")
                done = time.monotonic()

                async def all_there() -> bool:
                    return set(names) <= set(_properties(await accepted.report()))

                await eventually(all_there, timeout=10, what="every property of the burst")
                elapsed = time.monotonic() - done
                await eventually(lambda: not reporter.pending, what="nothing left to write")
        finally:
            for name in names:
                await kube.delete(member, kube.CLUSTER_PROPERTIES, name)
    # 20 changes as they came (each apply a round trip), coalesced: far fewer writes.
    assert reporter.writes - writes < len(names) / 2, reporter.writes - writes
    assert elapsed < 5, elapsed


async def test_a_restarted_agent_removes_what_another_field_manager_wrote_into_its_report(
    accepted: Accepted,
) -> None:
    """The attacker adds a property the member never had, with a field manager of its own.

    Here with the agent's own identity, as a second process holding its certificate could.
    The real agent, restarted, replaces the whole status: the property is gone and no other
    field manager owns any of it. With a server-side apply of its own fields, as before, it
    stayed (a list entry only another manager owns is never released).
    """
    evil = "evil.example.test"
    async with await accepted.member.client() as member:
        first = _reporter(accepted, member)
        async with running(first.run()):
            await eventually(lambda: first.writes and not first.pending, what="the first report")
        body = {
            "metadata": {"name": accepted.name, "namespace": accepted.namespace},
            "status": {"properties": [{"name": evil, "value": "owned"}]},
        }
        await kube.apply(
            accepted.hub, kube.MEMBER_REPORTS, body, field_manager="intruder", subresource="status"
        )
        planted = await accepted.report()
        assert evil in _properties(planted) and "intruder" in _status_managers(planted)

        second = _reporter(accepted, member)
        async with running(second.run()):

            async def owned() -> dict[str, Any] | None:
                report = await accepted.report()
                return None if evil in _properties(report) else report

            report = await eventually(owned, what="the intruder's property gone")
    assert _status_managers(report) == {FIELD_MANAGER_AGENT}
    assert report["status"]["proxyURL"] == PROXY  # the agent's own fields stay


def _status_managers(report: dict[str, Any]) -> set[str]:
    return {
        f["manager"]
        for f in report["metadata"].get("managedFields") or ()
        if f.get("subresource") == "status"
    }
