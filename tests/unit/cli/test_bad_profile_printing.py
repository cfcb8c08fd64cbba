"""The bad-input campaign over ``get`` and ``describe``: any stored profile prints."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.cli.profiles import describe_profile, profile_row
from tests.support.data.bad_input import campaign, check_outcome, hostile_profiles

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


@campaign(40)
@given(st.one_of(hostile_profiles(), hostile_profiles(crd_valid=False)))
def test_any_profile_prints_a_row_and_a_description(profile: dict[str, Any]) -> None:
    row = check_outcome(
        "get row",
        lambda: profile_row(profile, wide=True, namespace=True, now=NOW),
        (),
        field_of=str,
        names="",
    )
    assert all(isinstance(cell, str) for cell in row)
    text = check_outcome(
        "describe", lambda: describe_profile(profile, now=NOW), (), field_of=str, names=""
    )
    assert text.endswith("\n")
