"""A restarted agent owns its whole report again (``docs/agent.md``, "Reporting").

The attacker writes fields into the MemberReport's status with a field manager of its own
(here with the agent's own identity, as a second process holding its certificate could):
an advertised proxy the real agent never had, and a property its member never had. The real
agent, restarted, replaces the whole status: both are gone, and no other field manager owns
any of it. With a server-side apply of its own fields, as before, they stayed.
"""

from __future__ import annotations

from typing import Any

from cluster_inventory import kube
from cluster_inventory.agent import MemberReporter
from cluster_inventory.agent.report import advertised
from cluster_inventory.api.constants import FIELD_MANAGER_AGENT
from tests.agents import Accepted, running
from tests.waiting import eventually

INTRUDER = "intruder"
EVIL_PROXY = "socks5://evil.example.test:1080"
EVIL_PROPERTY = "evil.example.test"


def _reporter(accepted: Accepted, member: kube.ApiClient) -> MemberReporter:
    return MemberReporter(
        accepted.hub,
        member,
        name=accepted.name,
        namespace=accepted.namespace,
        access=advertised(accepted.member.server, accepted.member.ca_pem, None),
        probe_interval=0.5,
    )


def _status_managers(report: dict[str, Any]) -> set[str]:
    return {
        f["manager"]
        for f in report["metadata"].get("managedFields") or ()
        if f.get("subresource") == "status"
    }


def _foreign(report: dict[str, Any]) -> bool:
    status = report.get("status") or {}
    names = {p["name"] for p in status.get("properties") or ()}
    return status.get("proxyURL") == EVIL_PROXY or EVIL_PROPERTY in names


async def test_a_restarted_agent_removes_what_another_field_manager_wrote_into_its_report(
    accepted: Accepted,
) -> None:
    async with await accepted.member.client() as member:
        first = _reporter(accepted, member)
        async with running(first.run()):
            await eventually(lambda: first.writes and not first.pending, what="the first report")
        body = {
            "metadata": {"name": accepted.name, "namespace": accepted.namespace},
            "status": {
                "proxyURL": EVIL_PROXY,
                "properties": [{"name": EVIL_PROPERTY, "value": "owned"}],
            },
        }
        await kube.apply(
            accepted.hub,
            kube.MEMBER_REPORTS,
            body,
            field_manager=INTRUDER,
            subresource="status",
        )
        planted = await accepted.report()
        assert _foreign(planted) and INTRUDER in _status_managers(planted)

        second = _reporter(accepted, member)
        async with running(second.run()):

            async def owned() -> dict[str, Any] | None:
                report = await accepted.report()
                return None if _foreign(report) else report

            report = await eventually(owned, what="the intruder's fields gone")
            assert second.writes >= 1
    assert _status_managers(report) == {FIELD_MANAGER_AGENT}
    status = report["status"]
    assert "proxyURL" not in status
    assert status["server"] == accepted.member.server  # the agent's own fields stay
