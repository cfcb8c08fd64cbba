"""The manager mode's printed output: one table row per run, the lines behind it, the legend."""

from __future__ import annotations

import os
from typing import Any

from _prometheus import metric_total

from cluster_inventory.manager.rules.verdicts import REASON_BEHIND

from .figures import GROUPS, groups, scraped, summary
from .record import Run

HEADER = (
    f"{'N':>6} {'R':>2} {'quota':>6} {'floor s':>8} {'mfloor s':>8} {'cold s':>7} {'ratio':>6} "
    f"{'c/(h+m)':>7} {'tokens s':>8} {'core/rep':>8} {'cores/1k':>8} {'c/1k held':>9} "
    f"{'cold h/r/m/b':>19} {'rest h/r/m/b':>19} {'MiB/rep':>7} {'hub w/s':>7} "
    f"{'p50 ms':>6} {'p99 ms':>6} {'false c/r/k':>11} {'shard c/r/k':>11} "
    f"{'late p99/max s':>14} {'lag p99 s':>9} "
    f"{'kill s':>6} {'lost':>4} {'2-wr':>4} {'moved/exp/N/k':>15}"
)

COLUMNS = (
    "columns: quota = CPU limit per replica (cores; sX = squeezed to X cores after the rest, "
    "--squeeze); floor = N profiles created + status "
    "written directly; mfloor = a plain client's GET /readyz + LIST + WATCH ClusterProperty "
    "per member; cold = spawn to all full; ratio = cold/floor; c/(h+m) = cold/(floor+mfloor), "
    "target <= 2; core/rep = rest cores of the busiest replica; cores/1k = all replicas' rest "
    "cores per 1,000 members; c/1k held = the busiest replica's rest cores per 1,000 members it "
    "holds; h/r/m/b = cores of hub (apiserver + etcd) / replicas / simulated members (proxies + "
    "member apiservers) / this bench; hub w/s = mutating requests/s on the hub at rest; "
    "false c/r/k = ControlPlaneHealthy True->not True in cold start / rest / kill+join (a "
    "squeeze run: c/r/s/k, s = squeezed); shard "
    "c/r/k = replicas gone or back not caused by the bench, same phases; late = Lease renewal "
    "gap minus renew interval, whole run; lag = replicas' event-loop lag p99 at rest (their "
    "metric); kill s = SIGKILL to the victim's members fresh; 2-wr = profiles written by two "
    "replicas; moved/exp/N/k = holders changed by the join / rendezvous prediction / N over the "
    "replicas after it"
)


def _cell(value: float | None, width: int, fmt: str) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{fmt}}"


def _slash(values: list[Any], width: int, fmt: str) -> str:
    """``a/b/c``, ``-`` for each missing one (and for the whole when all are)."""
    if all(v is None for v in values):
        return f"{'-':>{width}}"
    return f"{'/'.join('-' if v is None else f'{v:{fmt}}' for v in values):>{width}}"


def row(run: Run) -> str:
    """One table line; ``-`` where the run did not get that far (its error is printed)."""
    x, st, changes, kill, join = (
        summary(run),
        run.settings,
        run.property_changes,
        run.kill,
        run.join,
    )
    two = (
        (kill.bad_holders + kill.victim_writes if kill else 0) + join.bad_holders if join else None
    )
    moves = f"{join.moved}/{join.expected_moves}/{join.naive_moves:.0f}" if join else "-"
    phases = (
        ("cold", "rest", "squeeze", "kill_join") if st.squeeze else ("cold", "rest", "kill_join")
    )
    w = run.watched
    false, shard = (w.false_transitions, w.shard_changes) if w else ({}, {})
    late_p99, late_max = (w.lease_lateness_p99_s, w.lease_lateness_max_s) if w else ({}, {})
    cold_g, rest_g = x.cold_groups or {}, x.steady_groups or {}
    return " ".join(
        [
            f"{st.n:6d} {st.r:2d}",
            f"{'s' + format(st.squeeze, 'g'):>6}" if st.squeeze else _cell(st.cpu_quota, 6, "g"),
            _cell(run.setup.floor_s, 8, ".2f"),
            _cell(run.setup.member_floor_s, 8, ".2f"),
            _cell(run.cold.seconds if run.cold else None, 7, ".2f"),
            _cell(x.ratio, 6, ".2f"),
            _cell(x.ratio_floors, 7, ".2f"),
            _cell(run.tokens.seconds if run.tokens else None, 8, ".2f"),
            _cell(x.cores_max, 8, ".3f"),
            _cell(x.cores_per_1k, 8, ".3f"),
            _cell(x.cores_per_1k_held, 9, ".3f"),
            _slash([cold_g.get(k) for k in GROUPS], 19, ".2f"),
            _slash([rest_g.get(k) for k in GROUPS], 19, ".2f"),
            _cell(x.rss_max_mib, 7, ".0f"),
            _cell(run.rest.hub_writes_per_s if run.rest else None, 7, ".1f"),
            _cell(changes.p50_s * 1000 if changes else None, 6, ".0f"),
            _cell(changes.p99_s * 1000 if changes else None, 6, ".0f"),
            _slash([false.get(p) for p in phases], 11, "d"),
            _slash([shard.get(p) for p in phases], 11, "d"),
            _slash([late_p99.get("all"), late_max.get("all")], 14, ".2f"),
            _cell(x.lag_p99_rest_s, 9, ".3f"),
            _cell(kill.fresh_s if kill else None, 6, ".1f"),
            _cell(kill.lost if kill else None, 4, "d"),
            _cell(two, 4, "d"),
            f"{moves:>15}",
        ]
    ) + ("  (error)" if run.error is not None else "")


def _tag(run: Run) -> str:
    st = run.settings
    return (
        f"N={st.n} R={st.r}"
        + (f" quota {st.cpu_quota:g}" if st.cpu_quota else "")
        + (f" squeeze {st.squeeze:g}" if st.squeeze else "")
        + ":"
    )


def details(run: Run) -> list[str]:
    """The lines behind a table row: settings, phases, CPU by process, kill and join."""
    return [
        f"{_tag(run)} {line}"
        for line in (
            _setup_lines(run)
            + _cpu_lines(run)
            + _rest_lines(run)
            + _watched_lines(run)
            + _metrics_lines(run)
            + _cost_lines(run)
            + _kill_lines(run)
            + _overload_lines(run)
            + _join_lines(run)
            + _end_lines(run)
        )
    ]


def _setup_lines(run: Run) -> list[str]:
    st, n = run.settings, run.settings.n
    lines = [
        f"commit {st.commit or '-'}",
        f"probe interval {st.probe_interval:g} s = {n / st.probe_interval:.0f} "
        f"member probes/s (3 requests each) over {st.real_members} real apiservers; "
        f"shard Lease {st.lease_duration:g} s, renewed every {st.renew_interval:g} s; "
        f"load average before {st.loadavg_before:.1f}",
        f"{n} registrations written in {run.setup.registrations_s:.1f} s",
    ]
    if st.cpu_quota:
        throttled_s = (run.end.cpu_throttled_s if run.end else None) or {}
        throttled = ", ".join(f"{k} {v:.1f}" for k, v in throttled_s.items())
        lines.append(
            f"each replica limited to {st.cpu_quota:g} cores ({st.cpu_limit}); "
            f"seconds throttled: {throttled or '-'}"
        )
    if run.setup.member_floor_s is not None:
        lines.append(
            f"member floor (new client, GET /readyz, LIST and WATCH ClusterProperty, 64 "
            f"in flight) {run.setup.member_floor_s:.2f} s; hub floor {run.setup.floor_s:.2f} s"
        )
    if run.cold:
        joined = ", ".join(f"{v:.1f}" for v in run.cold.joined_after_s.values())
        lines.append(
            f"replicas joined their shard group {joined} s and the first profile "
            f"appeared {run.cold.first_profile_s:.1f} s after they were spawned"
        )
    return lines


def _cpu_lines(run: Run) -> list[str]:
    lines = []
    for cores, label in (
        (run.cold.cores if run.cold else None, "cold start"),
        (run.tokens.cores if run.tokens else None, "token Secrets"),
        (run.rest.cores if run.rest else None, "rest"),
        (run.kill_cores, "kill and join"),
    ):
        if cores is None:
            continue
        parts = ", ".join(f"{k} {v:.2f}" for k, v in cores.items() if k != "machine")
        lines.append(
            f"cores during {label}: machine {cores['machine']:.2f} of {os.cpu_count()}; {parts}"
        )
        lines.append(
            f"cores during {label} by group: "
            + ", ".join(f"{k} {v:.2f}" for k, v in groups(cores).items() if k != "machine")
        )
    held = summary(run).cores_per_1k_held
    if held is not None:
        lines.append(f"at rest the busiest replica per 1,000 members it holds: {held:.3f} cores")
    return lines


def _rest_lines(run: Run) -> list[str]:
    rest, tokens = run.rest, run.tokens
    if rest is None or tokens is None:  # the rest comes after the token Secrets
        return []
    top = ", ".join(f"{k} {v:.2f}" for k, v in list(rest.hub_writes_by_resource.items())[:5])
    return [
        f"hub writes/s at rest by resource: {top or 'none'}",
        f"member requests (through {run.settings.proxies} proxy processes): "
        f"{tokens.member_requests:.0f} until "
        f"every token Secret existed, {rest.member_requests_per_s:.0f}/s at rest (busiest "
        f"second {rest.member_requests_peak_per_s:.0f}/s); proxy "
        f"connections open {rest.proxy_open_connections}",
        "RSS MiB per replica: "
        + ", ".join(f"{k} {v:.0f}" for k, v in rest.rss_mib.items())
        + "; open fds: "
        + ", ".join(f"{k} {v}" for k, v in rest.open_fds.items()),
    ]


def _watched_lines(run: Run) -> list[str]:
    w = run.watched
    if w is None:
        return []
    return [
        "false ControlPlaneHealthy transitions (away from True) by phase: "
        + ", ".join(f"{k} {v}" for k, v in w.false_transitions.items())
        + f"; profiles concerned {w.false_transition_profiles}; by status/reason "
        + (", ".join(f"{k} {v}" for k, v in w.false_transition_reasons.items()) or "-")
        + f"; by a new holder {w.false_transitions_at_handover}",
        "shard membership changes not caused by the benchmark, by phase: "
        + ", ".join(f"{k} {v}" for k, v in w.shard_changes.items())
        + (f" ({w.shard_change_log[:10]})" if w.shard_change_log else ""),
        "Lease renewal lateness p99/max s by phase: "
        + ", ".join(
            f"{k} {_slash([w.lease_lateness_p99_s[k], v], 1, '.2f').strip()}"
            for k, v in w.lease_lateness_max_s.items()
        ),
    ]


def _metrics_lines(run: Run) -> list[str]:
    lines = []
    for phase, figures in scraped(run).items():
        parts = []
        for key, value in figures.items():
            if isinstance(value, dict):
                value = ", ".join(
                    f"{k} {'/'.join(f'{b:g}' for b in v)}"
                    if isinstance(v, tuple | list)
                    else f"{k} {v:g}"
                    for k, v in value.items()
                )
            parts.append(f"{key} {'-' if value is None else value}")
        lines.append(f"replica metrics ({phase}): " + "; ".join(parts))
    return lines


def _cost_lines(run: Run) -> list[str]:
    lines = []
    if run.cold:
        top = ", ".join(f"{k} {v:g}" for k, v in run.cold.hub_requests_per_member.items())
        lines.append(
            f"the cold start per member: hub requests {top}; member requests "
            f"{run.cold.member_requests_per_member:g}"
        )
    if run.kill:
        top = ", ".join(f"{k} {v:g}" for k, v in run.kill.hub_requests_per_member.items())
        lines.append(
            f"the takeover per member taken over: hub requests {top}; member requests "
            f"{run.kill.member_requests_per_member:g} (every member's, probes at rest "
            "included, over the members taken over; the benchmark's own property write is one)"
        )
    return lines


def _overload_lines(run: Run) -> list[str]:
    st, sq, dr, w = run.settings, run.squeeze, run.drain, run.watched
    false, shard = (w.false_transitions, w.shard_changes) if w else ({}, {})
    lines = []
    if sq:
        throttled = ", ".join(f"{k} {v:.1f}" for k, v in sq.throttled_s.items())
        late = (w.lease_lateness_max_s if w else {}).get("squeeze")
        lines.append(
            f"squeezed every replica to {st.squeeze:g} cores for "
            f"{st.squeeze_for:g} s (throttled s: {throttled or '-'}): profiles saying "
            f"{REASON_BEHIND} at most {sq.behind_max} at once, "
            f"{sq.behind_end} at the end, {sq.behind_ever} ever; "
            f"property changes through {sq.changes_through}/{sq.changes}; false transitions "
            f"{false.get('squeeze')}, shard changes {shard.get('squeeze')}, Lease lateness max "
            f"{_cell(late, 1, '.2f').strip()} s"
        )
    if dr:
        lines.append(
            f"limit lifted: a property change on every sample member shown after "
            f"{dr.fresh_s:.1f} s, no profile saying {REASON_BEHIND} after "
            f"{dr.calm_s:.1f} s ({dr.behind_end} again at the end); false "
            f"transitions {false.get('drain')}, shard changes {shard.get('drain')}"
        )
    return lines


def _kill_lines(run: Run) -> list[str]:
    kill = run.kill
    if kill is None:
        return []
    claimed = "/".join(map(str, (kill.claimed_quantiles or {}).values())) or "-"
    fresh = "/".join(map(str, (kill.fresh_quantiles or {}).values())) or "-"
    return [
        f"SIGKILLed {kill.victim} holding {kill.members} profiles: its "
        f"members changed within {kill.writes_done_s:.1f} s, all fresh on live replicas "
        f"{kill.fresh_s:.1f} s after the kill (target <= 20 s; first/50%/90%/99% "
        f"claimed {claimed} s, fresh {fresh} s); lost {kill.lost}; "
        f"holder not victim->rendezvous owner {kill.bad_holders}; status writes "
        f"as the victim after the kill {kill.victim_writes}"
    ]


def _join_lines(run: Run) -> list[str]:
    join = run.join
    if join is None:
        return []
    return [
        f"{join.newcomer} joined: {join.moved} profiles changed holder "
        f"(rendezvous predicts {join.expected_moves}, N/{join.live_after} = "
        f"{join.naive_moves:.0f}), all settled in {join.settled_s:.1f} s; "
        f"other holder changes {join.bad_holders}"
    ]


def _end_lines(run: Run) -> list[str]:
    fenced = sum(
        metric_total(m, "cluster_inventory_shard_fenced_writes_total") or 0
        for m in (run.end.replica_metrics if run.end else {}).values()
    )
    lines = [f"fenced (409) writes counted by the replicas running at the end: {fenced:.0f}"]
    if run.error is not None:
        lines.append(
            f"ERROR {run.error} ({run.full_at_error}/{run.settings.n} profiles at full status then)"
        )
    return lines


def report(runs: list[Run], *, markdown: bool = False) -> None:
    """The table, as printed after a run or (``markdown``) for ``docs/scale.md``."""
    if not markdown:
        print(HEADER)
        for run in runs:
            print(row(run))
        return
    head = ["N", "R", "quota", "floor s", "mfloor s", "cold s", "ratio", "c/(h+m)", "tokens s"]
    head += ["core/rep", "cores/1k", "c/1k held", "cold h/r/m/b", "rest h/r/m/b", "MiB/rep"]
    head += ["hub w/s", "p50 ms", "p99 ms", "false c/r/k", "shard c/r/k", "late p99/max s"]
    head += ["lag p99 s", "kill s", "lost", "2-wr", "moved/exp/N/k"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for run in runs:
        cells = row(run).replace("  (error)", " (error)").split()
        print("| " + " | ".join(cells) + " |")
