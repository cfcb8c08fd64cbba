"""The fence of a sharded cluster manager (pure bookkeeping; the hub's 409 is tested live)."""

from __future__ import annotations

from typing import Any

from cluster_inventory.api.constants import ANNOTATION_SHARD_HOLDER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.manager.rules.fence import ProfileFence, member_id_elsewhere

KEY = ObjectKey("inv", "m1")


class View:
    """A membership as the fence reads it: an identity and the live replicas."""

    def __init__(self, identity: str, live: set[str]) -> None:
        self.config = type("Config", (), {"identity": identity, "renew_interval": 2.0})()
        self.live = live

    def is_live(self, identity: str) -> bool:
        return identity in self.live


def profile(version: str, holder: str | None = None, member_id: str | None = None) -> dict:
    meta: dict[str, Any] = {"name": KEY.name, "namespace": KEY.namespace}
    meta["resourceVersion"] = version
    if holder is not None:
        meta["annotations"] = {ANNOTATION_SHARD_HOLDER: holder}
    if member_id is not None:
        meta["labels"] = {LABEL_INVENTORY_MEMBER_ID: member_id}
    return {"metadata": meta}


def test_a_live_holder_blocks_others_and_a_dead_one_does_not():
    fence = ProfileFence(View("b", {"a", "b"}))  # type: ignore[arg-type]
    assert fence.holding(KEY, profile("10", "a")) == ("a", "10")
    assert fence.blocked_by("a")
    assert not fence.blocked_by("")
    assert not fence.blocked_by("b")
    fence.membership.live.discard("a")  # type: ignore[attr-defined]
    assert not fence.blocked_by("a")


def test_our_write_counts_until_the_cache_catches_up():
    fence = ProfileFence(View("b", {"a", "b"}))  # type: ignore[arg-type]
    cached = profile("10", "a")
    assert fence.wrote(KEY, cached, profile("11", "b")) == "11"
    # The cache still shows 10 (held by a): our claim at 11 is what counts.
    assert fence.holding(KEY, cached) == ("b", "11")
    fence.wrote(KEY, cached, profile("12", "b"))
    assert fence.holding(KEY, cached) == ("b", "12")
    # The echo of our first write (a claim's labels) before that of our second (its
    # status): the second still counts, or the next write would be refused with a 409.
    assert fence.holding(KEY, profile("11", "b")) == ("b", "12")
    # Anything newer in the cache wins (another replica's write, or our echo).
    assert fence.holding(KEY, profile("13", "c")) == ("c", "13")
    fence.forget(KEY)
    assert fence.holding(KEY, cached) == ("a", "10")


def test_a_chain_of_our_writes_restarts_once_the_cache_caught_up():
    fence = ProfileFence(View("b", {"b"}))  # type: ignore[arg-type]
    fence.wrote(KEY, profile("10", "a"), profile("11", "b"))
    fence.wrote(KEY, profile("10", "a"), profile("12", "b"))
    caught_up = profile("12", "b")
    assert fence.holding(KEY, caught_up) == ("b", "12")
    fence.wrote(KEY, caught_up, profile("13", "b"))
    # What the cache showed before it caught up is no longer ours to read past.
    assert fence.holding(KEY, profile("11", "b")) == ("b", "11")
    assert fence.holding(KEY, caught_up) == ("b", "13")


def test_annotations_name_us_unless_given_up():
    fence = ProfileFence(View("b", {"b"}))  # type: ignore[arg-type]
    assert fence.annotations() == {ANNOTATION_SHARD_HOLDER: "b"}
    assert fence.annotations("") == {ANNOTATION_SHARD_HOLDER: ""}


def test_member_ids_of_other_replicas_come_from_their_profiles():
    def profile(ns, mid=None):
        labels = {LABEL_INVENTORY_MEMBER_ID: mid} if mid else {}
        return {"metadata": {"name": "x", "namespace": ns, "labels": labels}}

    assert member_id_elsewhere([profile("a"), profile("b", "u1"), profile("c", "u2")]) == "u1"
    assert member_id_elsewhere([profile("a")]) is None
    assert member_id_elsewhere([]) is None
