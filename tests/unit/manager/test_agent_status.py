"""``manager agents``'s rows (manager/agent_status.py): joined, available, pending, refused."""

from __future__ import annotations

import datetime as dt
from typing import Any

from cluster_inventory.api import format_micro_time, format_time
from cluster_inventory.api.agents import new_acceptance_id
from cluster_inventory.api.constants import REPORTING_CONTROLLER_MANAGER
from cluster_inventory.manager import agent_registration_secret
from cluster_inventory.manager.rules.agent_approval import CsrAction, Decision, refusal_note
from cluster_inventory.manager.rules.agent_status import agent_statuses

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)


def _registration(name: str) -> dict[str, Any]:
    secret = agent_registration_secret(name, "ns", ["prod"], acceptance=new_acceptance_id())
    secret["metadata"]["creationTimestamp"] = format_time(NOW - dt.timedelta(hours=1))
    return secret


def _lease(name: str, ago: float, duration: int = 10) -> dict[str, Any]:
    renewed = format_micro_time(NOW - dt.timedelta(seconds=ago))
    return {
        "metadata": {"name": name},
        "spec": {"renewTime": renewed, "leaseDurationSeconds": duration},
    }


def _report(name: str, health: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"apiServerHealth": {"status": health}}}


def _event(member: str, csr: str, reason: str, ago: float) -> dict[str, Any]:
    decision = Decision(CsrAction.DELETE, reason, f"{reason} happened; deleted")
    return {
        "reportingController": REPORTING_CONTROLLER_MANAGER,
        "action": "Approve",
        "reason": reason,
        "eventTime": format_micro_time(NOW - dt.timedelta(seconds=ago)),
        "regarding": {"kind": "Secret", "name": member},
        "note": refusal_note(csr, decision),
    }


def test_each_agent_member_says_joined_available_pending_and_why_refused() -> None:
    probed = {"metadata": {"name": "probed", "annotations": {}}}
    csrs = [
        {"metadata": {"name": "junk-1", "labels": {"cluster-inventory.dev/agent": "fresh"}}},
        {
            "metadata": {"name": "mine"},
            "spec": {"username": "cluster-inventory:agent-bootstrap:waiting", "groups": []},
        },
        {"metadata": {"name": "done"}, "status": {"certificate": "Zm9v"}},
    ]
    rows = {
        s.name: s
        for s in agent_statuses(
            [_registration(n) for n in ("fresh", "stale", "waiting")] + [probed],
            [_lease("fresh", 5), _lease("stale", 51)],
            [_report("fresh", "True"), _report("stale", "True")],
            csrs,
            [
                _event("waiting", "c-old", "WrongAgent", 300),
                _event("waiting", "c-new", "AlreadyJoined", 10),
                {**_event("waiting", "x", "Other", 1), "reportingController": "someone-else"},
            ],
            NOW,
        )
    }
    assert sorted(rows) == ["fresh", "stale", "waiting"]  # the probed member is not one
    assert (rows["fresh"].joined, rows["fresh"].available) == (True, "True")
    assert rows["stale"].available == "Unknown"  # 51 s > 10 s x 5 without a renewal
    assert (rows["waiting"].joined, rows["waiting"].available) == (False, "-")
    assert rows["fresh"].pending == ("junk-1",) and rows["waiting"].pending == ("mine",)
    assert [(r.csr, r.reason) for r in rows["waiting"].refused] == [
        ("c-new", "AlreadyJoined"),
        ("c-old", "WrongAgent"),
    ]
    assert rows["waiting"].refused[0].why == "AlreadyJoined happened; deleted"
    assert rows["fresh"].accepted == NOW - dt.timedelta(hours=1)
