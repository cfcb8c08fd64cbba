"""The sanity of a run's record: the benchmark exits 1 (``_common.require``) when it fails."""

from __future__ import annotations

from typing import TypeVar

from _common import require, require_times

from .figures import summary
from .record import Run

T = TypeVar("T")


def _measured(value: T | None, tag: str, what: str) -> T:
    """``value``, which a run without error has; exit 1 naming ``what`` when it is None."""
    require(value is not None, f"{tag}: {what} was not recorded")
    assert value is not None
    return value


def check(run: Run) -> None:
    """Sanity of a record (exit code 1 when it fails)."""
    st = run.settings
    tag = f"N={st.n} R={st.r}"
    require(run.error is None, f"{tag}: {run.error}")
    cold = _measured(run.cold, tag, "the cold start")
    tokens = _measured(run.tokens, tag, "the token Secrets")
    rest = _measured(run.rest, tag, "the rest")
    changes = _measured(run.property_changes, tag, "the property changes")
    watched = _measured(run.watched, tag, "what the watches saw")
    end = _measured(run.end, tag, "the teardown")
    x = summary(run)
    cold_groups = _measured(x.cold_groups, tag, "the cold start's cores")
    steady_groups = _measured(x.steady_groups, tag, "the rest's cores")
    require_times(
        floor=run.setup.floor_s,
        member_floor=run.setup.member_floor_s,
        ratio_floors=x.ratio_floors,
        cold_start=cold.seconds,
        tokens=tokens.seconds,
        p50=changes.p50_s,
        p99=changes.p99_s,
        hub_writes=rest.hub_writes_per_s,
        cores_per_1k_held=x.cores_per_1k_held,
        **{f"rss_{k}": v for k, v in rest.rss_mib.items()},
        **{f"cold {k}": v for k, v in cold_groups.items()},
        **{f"steady {k}": v for k, v in steady_groups.items()},
    )
    require(
        _measured(run.setup.member_floor_s, tag, "the member floor") > 0, f"{tag}: member floor > 0"
    )
    require(steady_groups["replicas"] > 0, f"{tag}: the replicas used CPU at rest")
    phases = ["cold", "rest", "all"] + (["kill_join"] if st.r > 1 else [])
    for figure, counts in (
        ("false_transitions", watched.false_transitions),
        ("shard_changes", watched.shard_changes),
    ):
        require(
            all(isinstance(counts[p], int) and counts[p] >= 0 for p in phases),
            f"{tag}: {figure} counted per phase: {counts}",
        )
    false = watched.false_transitions
    require(
        false["all"] >= sum(false[p] for p in ("cold", "rest")),
        f"{tag}: the whole run holds the phases' false transitions",
    )
    late = watched.lease_lateness_max_s["all"]
    require(
        late is not None and -st.renew_interval < late < watched.windows["all"][1],
        f"{tag}: Lease renewals seen, lateness {late}",
    )
    require(tokens.seconds >= cold.seconds >= cold.first_profile_s >= 0, f"{tag}: phases in order")
    require(changes.p99_s >= changes.p50_s, f"{tag}: p99 >= p50")
    require(len(rest.owned) == st.r, f"{tag}: every replica holds profiles")
    require(sum(rest.owned.values()) == st.n, f"{tag}: N profiles held")
    require(end.deleted == 0 and run.count_end == st.n, f"{tag}: no profile lost")
    require(end.tracebacks == 0, f"{tag}: no traceback in the replicas' logs")
    if st.squeeze:
        windows = watched.windows
        squeeze = _measured(run.squeeze, tag, "the squeeze")
        require(
            windows["drain"][1] >= windows["squeeze"][1] > windows["squeeze"][0],
            f"{tag}: squeeze then drain, in order",
        )
        require(
            0 <= squeeze.changes_through <= squeeze.changes,
            f"{tag}: squeeze changes counted",
        )
    if st.r > 1:
        kill = _measured(run.kill, tag, "the kill")
        join = _measured(run.join, tag, "the join")
        require(kill.lost == 0, f"{tag}: kill lost no profile")
        require(
            kill.bad_holders == kill.victim_writes == join.bad_holders == 0,
            f"{tag}: no profile written by two replicas",
        )
        require(join.moved == join.expected_moves, f"{tag}: the join moved what rendezvous says")
