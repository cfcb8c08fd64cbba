"""Virtual members without a proxy: stable distinct ids, processes enough for the descriptors."""

from __future__ import annotations

import resource
import uuid
from types import SimpleNamespace

import pytest

from cluster_inventory_workshop import VirtualMembers, member_id


def test_member_ids_are_stable_across_runs() -> None:
    # Pinned: a benchmark compares profiles across runs by member id.
    assert member_id(0) == "5e5d2943-b10e-5389-bc46-79a56f4387d2"
    assert member_id(1) == "b6e7813e-f7c4-5845-89d6-9fb646302483"


def test_ten_thousand_members_have_distinct_version_5_ids() -> None:
    ids = [uuid.UUID(member_id(n)) for n in range(10_000)]
    assert len(set(ids)) == 10_000
    assert {i.version for i in ids} == {5}
    assert all(len(str(i)) == 36 for i in ids)  # the proxy swaps UIDs of equal length


def test_negative_index_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        member_id(-1)


@pytest.mark.parametrize(
    ("hard", "count", "processes"),
    [
        (20_000, 10_000, 2),
        (20_000, 9_000, 1),
        (1_048_576, 10_000, 1),
        (4_096, 3_072, 2),
        (4_096, 3_073, 3),
    ],
)
def test_members_are_spread_so_no_proxy_runs_out_of_descriptors(
    monkeypatch: pytest.MonkeyPatch, hard: int, count: int, processes: int
) -> None:
    # Two connections per member (a watch and a probe) and 1,024 spare per process.
    monkeypatch.setattr(resource, "getrlimit", lambda _: (hard, hard))
    vm = VirtualMembers(SimpleNamespace(members={"m": object()}), count)  # type: ignore[arg-type]
    assert len(vm.ports) == processes
