"""A member taken over from another holder starts from that holder's verdict.

The member id and the version the last holder recorded on the profile are kept until a
reconnect or the ``VERSION_EVERY``-th probe; the pool starts such a member with its
ClusterProperty list, probing it at once only if the list does not answer, so a takeover
costs three member requests fewer per member (docs/scale.md).
"""

from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry

from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.members.connection import MemberConnection
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.status import ConditionState, Observation
from cluster_inventory.testing import Fleet
from tests.support.waiting import eventually

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


async def test_the_pool_starts_a_seeded_member_with_its_list_and_probes_one_that_does_not_answer(
    fleet: Fleet,
):
    """A takeover is the ClusterProperty list and watch; a seed whose list fails is probed."""
    seed = Observation(
        version="v0.0.0-last-holder", healthy=HEALTHY, joined=HEALTHY, member_id="last-holder"
    )
    live = next(iter(fleet.members.values())).connection()
    dead = dataclasses.replace(live, server="https://127.0.0.1:1")  # nothing listens there
    started: list[object] = []
    pool = MemberPool(
        # A long interval: the live member's first probe (at a random phase of it) never
        # comes before its list answers.
        ManagerConfig(probe_interval=600.0, probe_timeout=3.0),
        registry=CollectorRegistry(),
    )
    pool.started.subscribe(started.append)
    pool.start()
    try:
        pool.add({live, dead}, {}, seeds={live: seed, dead: seed})
        await eventually(lambda: len(started) == 2, timeout=30, what="both members started")
        answering, silent = pool.get(live), pool.get(dead)
        assert answering is not None and silent is not None
        assert answering.probes == 0  # listed, not probed: the seed stands
        assert answering.observation.properties is not None
        assert answering.observation.healthy.status == "True"
        assert silent.probes >= 1  # its list did not answer: asked at once (and retried)
        assert silent.observation.healthy.status == "False"
    finally:
        await pool.close()
