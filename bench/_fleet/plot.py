"""The plot of a results file's manager-mode runs against N (``docs/images/fleet_scale.png``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .figures import GROUPS, summary
from .record import Run


def _line(ax: Any, points: list[tuple[int, Any]], style: str, **kwargs: Any) -> None:
    """One line of (N, figure) points on ``ax`` (drawn, and in the legend, even when empty)."""
    ax.plot([n for n, _ in points], [y for _, y in points], style, **kwargs)


def _series(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """(label, runs by N) per (R, quota, squeeze)."""
    out = []
    for _, r, quota, squeeze in sorted({(0, *x.settings.place[1:]) for x in runs}):
        series = sorted(
            (x for x in runs if x.settings.place[1:] == (r, quota, squeeze)),
            key=lambda x: x.settings.place,
        )
        label = (
            f"R={r}"
            + (f" at {quota:g} cores" if quota else "")
            + (f" squeezed to {squeeze:g}" if squeeze else "")
        )
        out.append((label, series))
    return out


def _draw_curve(ax: Any, run: Run) -> None:
    """The curve of a cold start that did not finish: profiles (full and all) and cores by
    process against seconds since the spawn."""
    curve = run.cold_curve
    ts = [p["t"] for p in curve]
    ax.plot(ts, [p["full"] for p in curve], "k-", label="profiles at full status")
    ax.plot(ts, [p["profiles"] for p in curve], "k--", label="profiles")
    ax.set_ylabel("profiles")
    cores = ax.twinx()
    for label in ("hub apiserver", "member apiservers", "proxy", "etcd"):
        cores.plot(ts, [p["cores"][label] for p in curve], label=label, alpha=0.7)
    cores.plot(
        ts,
        [sum(v for k, v in p["cores"].items() if k.startswith("replica")) for p in curve],
        label="replicas",
        alpha=0.7,
    )
    cores.plot(ts, [p["cores"]["machine"] for p in curve], ":", label="machine")
    cores.set_ylabel("cores")
    cores.set_ylim(0, (os.cpu_count() or 2) * 1.05)
    cores.legend(fontsize=7, loc="center right")
    ax.set_title(f"N={run.settings.n} R={run.settings.r}: cold start did not finish")
    ax.set_xlabel("seconds after spawning the replicas")


def _draw_series(axes: list[Any], label: str, style: str, series: list[Run]) -> None:
    """One series' lines on the ten axes of figures against N."""
    group_colour = dict(zip(GROUPS, ("C0", "C1", "C2", "C3"), strict=True))
    figures = [(x.settings.n, x, summary(x)) for x in series]
    steady = [(n, sm) for n, x, sm in figures if x.rest]
    _line(axes[0], [(n, sm.cores_per_1k) for n, sm in steady], style, label=label)
    _line(axes[1], [(n, sm.rss_max_mib) for n, sm in steady], style, label=label)
    cold = [(n, c, sm) for n, x, sm in figures if (c := x.cold)]
    both = [
        (n, x.setup.floor_s + m, sm)
        for n, x, sm in figures
        if x.cold and (m := x.setup.member_floor_s) is not None
    ]
    _line(axes[2], [(n, c.seconds) for n, c, _ in cold], style, label=f"cold start, {label}")
    _line(
        axes[2],
        [(n, 2 * floors) for n, floors, _ in both],
        "x:",
        label=f"2 x (hub + member floor), {label}",
    )
    _line(
        axes[3],
        [(n, sm.ratio) for n, _, sm in cold],
        style,
        alpha=0.4,
        label=f"/ hub floor, {label}",
    )
    _line(
        axes[3],
        [(n, sm.ratio_floors) for n, _, sm in both],
        style,
        label=f"/ (hub + member floor), {label}",
    )
    _line(
        axes[4],
        [(n, x.setup.member_floor_s) for n, x, _ in figures if x.setup.member_floor_s is not None],
        style,
        label=f"member, {label}",
    )
    _line(
        axes[4],
        [(n, x.setup.floor_s) for n, x, _ in figures],
        style,
        alpha=0.4,
        label=f"hub, {label}",
    )
    for ax, phase in ((axes[5], "cold_groups"), (axes[6], "steady_groups")):
        grouped = [(n, g) for n, _, sm in figures if (g := getattr(sm, phase)) is not None]
        for group in GROUPS:
            _line(
                ax,
                [(n, g[group]) for n, g in grouped],
                style,
                color=group_colour[group],
                label=f"{group}, {label}",
            )
    watched = [(n, x.watched) for n, x, _ in figures if x.watched]
    for ax, figure in ((axes[7], "false_transitions"), (axes[8], "shard_changes")):
        for phase in ("cold", "rest", "kill_join"):
            has = [
                (n, counts[phase]) for n, w in watched if phase in (counts := getattr(w, figure))
            ]
            if has:
                _line(ax, has, style, label=f"{phase}, {label}")
    late = [(n, w) for n, w in watched if w.lease_lateness_max_s.get("all") is not None]
    _line(
        axes[9],
        [(n, w.lease_lateness_max_s["all"]) for n, w in late],
        style,
        label=f"max, {label}",
    )
    _line(
        axes[9],
        [(n, w.lease_lateness_p99_s["all"]) for n, w in late],
        style,
        alpha=0.4,
        label=f"p99, {label}",
    )


def plot(runs: list[Run], path: Path) -> None:
    """Against N: CPU, RSS, cold start and its floors, CPU by group, false health
    transitions, shard changes, Lease renewal lateness; and the curve of any cold start
    that did not finish."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stuck = [x for x in runs if x.cold is None and x.cold_curve]
    cols = max(5, len(stuck))
    fig, grid = plt.subplots(
        2 + bool(stuck), cols, figsize=(5 * cols, 4.5 * (2 + bool(stuck))), squeeze=False
    )
    axes = list(grid[0][:5]) + list(grid[1][:5])
    curves = list(grid[2][: len(stuck)]) if stuck else []
    for ax in [a for line in grid for a in line if a not in axes and a not in curves]:
        ax.set_visible(False)
    for ax, run in zip(curves, stuck, strict=True):
        _draw_curve(ax, run)
    for k, (label, series) in enumerate(_series(runs)):
        _draw_series(axes, label, ("o-", "s--", "^:", "d-.")[k % 4], series)
    titles = (
        ("Rest CPU per 1,000 members (all replicas)", "cores"),
        ("RSS of the largest replica", "MiB"),
        ("Cold start to every profile at full status", "seconds"),
        ("Cold start / floors", "ratio"),
        ("Floors: hub writes, member requests", "seconds"),
        ("CPU by process group, cold start", "cores"),
        ("CPU by process group, at rest", "cores"),
        ("False health transitions", "count"),
        ("Shard membership changes (not the benchmark's)", "count"),
        ("Lease renewal lateness, whole run", "seconds"),
    )
    for ax, (title, unit) in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.set_ylabel(unit)
    axes[1].axhline(400, color="grey", linestyle=":", label="target 400 MiB (10,000 over 3)")
    axes[2].axhline(180, color="grey", linestyle=":", label="target 180 s (10,000)")
    axes[3].axhline(2, color="grey", linestyle=":", label="target 2x")
    probe = ", ".join(sorted({f"{x.settings.probe_interval:g}" for x in runs}))
    for ax in axes:
        if ax.has_data():
            ax.set_xscale("log")
        ax.set_xlabel("distinct members N")
    for ax in axes + curves:
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left" if ax in curves else None)
    fig.suptitle(
        f"bench/fleet_scale.py: cluster manager replicas (probe interval {probe} s, 2 cores)"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
