"""A member taken over from another holder starts from that holder's verdict.

Its first probe is ``/readyz`` alone: the member id and the version the last holder
recorded on the profile are kept until a reconnect or the ``VERSION_EVERY``-th probe, so
a takeover costs two member requests fewer per member (docs/scale.md).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.member import MemberConnection
from cluster_inventory.manager.status import ConditionState, Observation
from cluster_inventory.testing import Fleet

HEALTHY = ConditionState("True", "APIServerReady", "from the last holder")


def _member(fleet: Fleet, seed: Observation | None) -> MemberConnection:
    member = next(iter(fleet.members.values()))
    return MemberConnection(
        member.connection(),
        config=ManagerConfig(probe_interval=30.0, probe_timeout=10.0),
        on_change=lambda: None,
        registry=CollectorRegistry(),
        seed=seed,
    )


async def test_a_seeded_member_reads_only_readyz_first(fleet: Fleet):
    seed = Observation(
        version="v0.0.0-last-holder", healthy=HEALTHY, joined=HEALTHY, member_id="last-holder"
    )
    seeded, fresh = _member(fleet, seed), _member(fleet, None)
    try:
        await seeded.start(probe_first=True)
        await fresh.start(probe_first=True)
        assert seeded.observed and fresh.observed
        # The seeded connection kept what the last holder recorded: it read neither the
        # kube-system namespace nor /version; the readyz verdict it did read is healthy.
        assert seeded.observation.member_id == "last-holder"
        assert seeded.observation.version == "v0.0.0-last-holder"
        assert seeded.observation.healthy.status == "True"
        # Without a seed the same member is read whole.
        assert fresh.observation.member_id not in (None, "last-holder")
        assert (fresh.observation.version or "").startswith("v1.")
    finally:
        await seeded.stop()
        await fresh.stop()


async def test_a_seeded_member_that_fails_readyz_is_read_whole_again(fleet: Fleet):
    """A seed is no verdict: an unhealthy answer drops it and the next probe reconnects."""
    seed = Observation(
        version="v0.0.0-last-holder", healthy=HEALTHY, joined=HEALTHY, member_id="last-holder"
    )
    member = _member(fleet, seed)
    try:
        await member.start(probe_first=True)
        member.observation = Observation(
            version=member.observation.version,
            healthy=ConditionState("False", "APIServerUnreachable", "test"),
            joined=member.observation.joined,
            member_id=member.observation.member_id,
        )
        await member.probe()
        assert member.observation.healthy.status == "True"
        assert member.observation.member_id != "last-holder"
        assert (member.observation.version or "").startswith("v1.")
    finally:
        await member.stop()
