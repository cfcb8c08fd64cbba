"""The heartbeat's renewal schedule: the Lease duration with +/-25% jitter (OCM's klusterlet)."""

from __future__ import annotations

import random

import pytest

from cluster_inventory.agent import ReportingConfig
from cluster_inventory.agent.heartbeat import JITTER, renew_interval


@pytest.mark.parametrize("duration", [1.0, 60.0, 3600.0])
def test_renewals_stay_within_the_jitter_bounds(duration: float) -> None:
    rng = random.Random(7)
    intervals = [renew_interval(duration, rng.random()) for _ in range(2000)]
    assert min(intervals) >= duration * (1 - JITTER)
    assert max(intervals) < duration * (1 + JITTER)
    # Spread over the whole window, not bunched at the mean.
    assert min(intervals) < duration * 0.8 and max(intervals) > duration * 1.2


def test_the_bounds_are_exact_at_the_ends() -> None:
    assert renew_interval(60, 0.0) == 45.0
    assert renew_interval(60, 0.5) == 60.0
    assert renew_interval(60, 0.5, jitter=0) == 60.0


@pytest.mark.parametrize(("duration", "jitter"), [(0, 0.25), (-1, 0.25), (60, 1.0), (60, -0.1)])
def test_a_bad_duration_or_jitter_is_refused(duration: float, jitter: float) -> None:
    with pytest.raises(ValueError, match="heartbeat"):
        renew_interval(duration, 0.5, jitter)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "Member_1"}, "agent: name"),
        ({"namespace": ""}, "agent: namespace"),
        ({"lease_duration": 0}, "agent lease_duration"),
        ({"probe_interval": -1}, "agent probe_interval"),
        ({"server": "http://plain"}, "agent server"),
    ],
)
def test_bad_agent_settings_name_their_field(changes: dict[str, object], field: str) -> None:
    settings: dict[str, object] = {"name": "member1", "namespace": "cluster-inventory-system"}
    with pytest.raises(ValueError, match=field):
        ReportingConfig(**{**settings, **changes})  # type: ignore[arg-type]
