"""The engagement decision table, without a server."""

from __future__ import annotations

import pytest

from cluster_inventory.runtime import (
    Action,
    EngagementPlan,
    EngagementPolicy,
    control_plane_healthy,
    group_holder,
    member_id,
    plan_engagement,
)

POLICY = EngagementPolicy(disengage_unhealthy_after=60.0, readiness_recheck=10.0)


def plan(**kw) -> EngagementPlan:
    kw.setdefault("policy", POLICY)
    kw.setdefault("exists", True)
    kw.setdefault("engaged", False)
    kw.setdefault("ready", True)
    return plan_engagement(**kw)


def test_a_ready_profile_with_access_is_engaged() -> None:
    assert plan() == EngagementPlan(Action.ENGAGE)


def test_an_engaged_cluster_with_the_same_access_is_kept_whatever_else_changed() -> None:
    assert plan(engaged=True, same_access=True) == EngagementPlan(Action.KEEP)


def test_an_engaged_cluster_with_new_access_inputs_is_rebuilt() -> None:
    assert plan(engaged=True, same_access=False) == EngagementPlan(Action.REBUILD, "access-changed")


def test_a_deleted_profile_disengages_its_cluster() -> None:
    assert plan(exists=False, engaged=True) == EngagementPlan(Action.DISENGAGE, "deleted")
    assert plan(exists=False) == EngagementPlan(Action.IGNORE, "deleted")


def test_a_not_ready_profile_is_not_engaged_and_is_rechecked() -> None:
    assert plan(ready=False) == EngagementPlan(Action.IGNORE, "not-ready", 10.0)


def test_an_unhealthy_engaged_cluster_is_kept_until_the_policy_period_ends() -> None:
    assert plan(engaged=True, ready=False, unhealthy_for=0.0) == EngagementPlan(
        Action.KEEP, "unhealthy", 10.0
    )
    assert plan(engaged=True, ready=False, unhealthy_for=55.0) == EngagementPlan(
        Action.KEEP, "unhealthy", 5.0
    )
    assert plan(engaged=True, ready=False, unhealthy_for=60.0) == EngagementPlan(
        Action.DISENGAGE, "unhealthy"
    )


def test_policy_none_keeps_an_unhealthy_cluster_and_zero_drops_it_at_once() -> None:
    never = EngagementPolicy(disengage_unhealthy_after=None)
    at_once = EngagementPolicy(disengage_unhealthy_after=0)
    assert plan(engaged=True, ready=False, unhealthy_for=1e9, policy=never).action is Action.KEEP
    assert plan(engaged=True, ready=False, policy=at_once).action is Action.DISENGAGE


def test_unresolvable_access_keeps_the_engaged_cluster_and_engages_nothing_new() -> None:
    assert plan(engaged=True, access_ok=False) == EngagementPlan(Action.KEEP, "no-access")
    assert plan(access_ok=False) == EngagementPlan(Action.IGNORE, "no-access")


def test_a_duplicate_of_another_profile_is_not_engaged() -> None:
    assert plan(holder=False) == EngagementPlan(Action.IGNORE, "duplicate")
    assert plan(engaged=True, holder=False) == EngagementPlan(Action.DISENGAGE, "duplicate")


def test_the_engaged_profile_holds_its_member_id_otherwise_the_first_eligible() -> None:
    assert group_holder(engaged=["b/x"], eligible=["a/x", "b/x"]) == "b/x"
    assert group_holder(engaged=[], eligible=["b/x", "a/x"]) == "a/x"
    assert group_holder(engaged=[], eligible=[]) is None


def test_default_readiness_is_control_plane_healthy_true() -> None:
    def profile(status: str | None) -> dict:
        conditions = [{"type": "Joined", "status": "True"}]
        if status is not None:
            conditions.append({"type": "ControlPlaneHealthy", "status": status})
        return {"status": {"conditions": conditions}}

    assert control_plane_healthy(profile("True"))
    assert not control_plane_healthy(profile("False"))
    assert not control_plane_healthy(profile("Unknown"))
    assert not control_plane_healthy(profile(None))
    assert not control_plane_healthy({})


def test_member_id_comes_from_the_inventory_member_id_label() -> None:
    label = "multicluster.x-k8s.io/inventory-member-id"
    assert member_id({"metadata": {"labels": {label: "uid-1"}}}) == "uid-1"
    assert member_id({"metadata": {"labels": {label: ""}}}) is None
    assert member_id({"metadata": {}}) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("disengage_unhealthy_after", -1), ("readiness_recheck", 0), ("cache_sync_timeout", 0)],
)
def test_policy_refuses_impossible_durations(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        EngagementPolicy(**{field: value})
