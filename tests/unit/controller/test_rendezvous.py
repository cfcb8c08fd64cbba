"""Rendezvous hashing and the shard settings: pure parts of ``controller.sharding``."""

from __future__ import annotations

import collections

import pytest

from cluster_inventory.controller.sharding import ShardConfig, lease_name, rendezvous_owner

MEMBERS = [f"member-{i}" for i in range(3000)]


def test_members_are_spread_evenly_and_deterministically():
    replicas = ["a", "b", "c"]
    owners = [rendezvous_owner(m, replicas) for m in MEMBERS]
    assert owners == [rendezvous_owner(m, list(reversed(replicas))) for m in MEMBERS]
    counts = collections.Counter(owners)
    assert set(counts) == set(replicas)
    assert all(800 <= n <= 1200 for n in counts.values()), counts  # 1,000 each, +-20%


def test_a_replica_joining_takes_about_one_nth_and_only_for_itself():
    before = {m: rendezvous_owner(m, ["a", "b", "c"]) for m in MEMBERS}
    after = {m: rendezvous_owner(m, ["a", "b", "c", "d"]) for m in MEMBERS}
    moved = [m for m in MEMBERS if before[m] != after[m]]
    assert all(after[m] == "d" for m in moved)
    assert 0.2 <= len(moved) / len(MEMBERS) <= 0.3, len(moved)  # 1/4 expected


def test_a_replica_leaving_moves_only_its_own_members():
    before = {m: rendezvous_owner(m, ["a", "b", "c"]) for m in MEMBERS}
    after = {m: rendezvous_owner(m, ["a", "c"]) for m in MEMBERS}
    assert {m for m in MEMBERS if before[m] != after[m]} == {m for m in MEMBERS if before[m] == "b"}


def test_no_replica_owns_nothing():
    assert rendezvous_owner("m", []) is None


def test_lease_names_are_valid_and_distinct():
    names = {lease_name("cluster-inventory", f"Host_{i}.Example") for i in range(50)}
    assert len(names) == 50
    long = lease_name("g" * 80, "pod-" + "x" * 300)
    assert len(long) <= 63 and long == long.lower() and long[0].isalnum() and long[-1].isalnum()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"lease_duration": 2.0, "renew_interval": 2.0}, "lease_duration > renew_interval"),
        ({"identity": ""}, "non-empty identity"),
        ({"settle": -1.0}, "settle"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    base = {"namespace": "ns", "group": "g", "identity": "me"}
    with pytest.raises(ValueError, match=message):
        ShardConfig(**{**base, **settings})
