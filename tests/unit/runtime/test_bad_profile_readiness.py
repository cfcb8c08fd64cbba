"""The bad-input campaign over the runtime's readiness and member-id reads of a profile."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.runtime import control_plane_healthy, member_id
from tests.support.data.bad_input import campaign, check_outcome, hostile_profiles


@campaign(40)
@given(st.one_of(hostile_profiles(), hostile_profiles(crd_valid=False)))
def test_readiness_and_member_id_read_any_profile(profile: dict[str, Any]) -> None:
    ready = check_outcome(
        "runtime readiness", lambda: control_plane_healthy(profile), (), field_of=str, names=""
    )
    assert isinstance(ready, bool)
    mid = check_outcome("runtime member id", lambda: member_id(profile), (), field_of=str, names="")
    assert mid is None or isinstance(mid, str)


def test_conditions_of_another_type_are_not_ready():
    # A condition that is not an object used to raise AttributeError out of readiness.
    assert control_plane_healthy({"status": {"conditions": ["ControlPlaneHealthy"]}}) is False
    assert member_id({"metadata": {"labels": ["x"]}}) is None
