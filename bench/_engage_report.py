"""What bench/runtime_engage.py prints: a run's line, py-spy's summary, the baseline comparison.

A run's result is the dict ``run_size`` returns; :func:`figures` are the per-cluster and
per-run figures compared with ``bench/results/runtime_engage.json`` (``bench/_baseline.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from _common import require, require_times


class Profiler:
    """py-spy recording one process (``--py-spy``), stopped with SIGINT, summarised."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out = pid, out
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        spy = Path(sys.executable).parent / "py-spy"
        self.proc = await asyncio.create_subprocess_exec(
            str(spy), "record", "--nonblocking", "--rate", "200", "--format", "raw",
            "--output", str(self.out), "--pid", str(self.pid),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip

    async def stop(self) -> list[str]:
        """Stop recording; lines naming where the samples were (self and inclusive)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        await self.proc.wait()
        return summarise_profile(self.out)


def summarise_profile(path: Path, top: int = 18) -> list[str]:
    """The frames with the most samples in py-spy's raw (collapsed) output at ``path``."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [f.split(" (")[0] + " (" + f.split(" (")[-1] for f in stack.split(";")[1:]]
        if not frames or not count.isdigit():
            continue
        total += int(count)
        own[frames[-1]] = own.get(frames[-1], 0) + int(count)
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + int(count)
    require(total > 0, f"py-spy recorded samples into {path}")
    lines = [f"py-spy {path.name}: {total} samples on CPU; by own samples:"]
    for frame, count in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    lines.append("  by samples with the frame on the stack:")
    for frame, count in sorted(inclusive.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    return lines


def case(r: dict) -> str:
    """The result's key in the baseline file."""
    replicas = f" replicas={r['replicas']}" if r["replicas"] else ""
    return f"{r['access']} N={r['n']} plugin={r['plugin']} loop={r['loop']}{replicas}"


def figures(r: dict) -> dict[str, float]:
    """What the baseline compares (lower is better): per engaged cluster, per plugin run."""
    runs = sum(r["plugin_runs"])
    return {
        "bulk_seconds": r["bulk_seconds"],
        "runtime_cpu_ms_per_cluster": sum(r["cpu_bulk"]) * 1000 / r["bulk"],
        **({"plugin_cpu_ms_per_run": sum(r["plugin_cpu"]) * 1000 / runs} if runs else {}),
        "engage_p50_ms": r["engage_p50"] * 1000,
        "startup_seconds": r["startup"],
        "startup_cpu_seconds": max(r["startup_cpu"]),
        "rss_idle_mib": max(r["rss_idle"]),
        "rss_full_mib": sum(r["rss_full"]),
    }


def report(r: dict) -> None:
    n = r["n"]
    samples = min(100, n // 2)
    require(r["samples"] == samples, f"N={n}: {samples} engage latencies measured")
    require(r["bulk"] == n - samples, f"N={n}: the rest engaged in bulk")
    lists = ("rss_idle", "rss_full", "cpu_bulk", "plugin_cpu", "plugin_runs", "plugin_wall")
    lists += ("startup_cpu", "per_replica")
    scalars = ("n", "access", "loop", "replicas", "own_p50", "own_p99", "engaged_twice")
    scalars += ("plugin", "label", "profile")
    require_times(**{k: v for k, v in r.items() if k not in lists + scalars + ("not_engaged",)})
    for name in lists[:-1]:
        require_times(**{f"{name}[{i}]": v for i, v in enumerate(r[name])})
    require(
        all(v > 0 for v in r["rss_idle"]) and r["bulk_seconds"] > 0,
        f"N={n}: memory and time measured",
    )
    require(r["engaged_twice"] == 0, f"N={n}: {r['engaged_twice']} clusters engaged twice")
    require(r["not_engaged"] == 0, f"N={n}: {r['not_engaged']} clusters never engaged")
    require(r["misplaced"] == 0, f"N={n}: {r['misplaced']} clusters off their owner")
    require(sum(r["per_replica"]) == n, f"N={n}: the replicas engaged {r['per_replica']}")
    runs = sum(r["plugin_runs"])
    if r["access"] == "distinct":  # one credential per cluster: one run each, at least
        require(runs >= n, f"N={n}: {runs} plugin runs for {n} distinct credentials")

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    def mib(values: list[float]) -> str:
        return " / ".join(f"{v:.0f}" for v in values) + " MiB"

    cpu = sum(r["cpu_bulk"])
    plugin_cpu, wall = sum(r["plugin_cpu"]), sum(r["plugin_wall"])
    replicas = r["replicas"]
    where = f" replicas={replicas} (clusters each {r['per_replica']})" if replicas else ""
    rss = (
        f"RSS per replica idle {mib(r['rss_idle'])}, with {n} engaged over all {mib(r['rss_full'])}"
        if replicas
        else f"RSS idle {r['rss_idle'][0]:.0f} MiB, with {n} engaged {r['rss_full'][0]:.0f} MiB "
        f"({(r['rss_full'][0] - r['rss_idle'][0]) * 1024 / n:.0f} KiB per cluster; "
        "target 1,000 <= 300 MB)"
    )
    label = f"[{r['label']}] " if r["label"] else ""
    print(
        f"{label}N={n} access={r['access']} loop={r['loop']} plugin={r['plugin']}{where}: "
        f"profiles created in {r['create_seconds']:.1f} s; "
        f"bulk engage of {r['bulk']} in {r['bulk_seconds']:.2f} s "
        f"({r['bulk'] / r['bulk_seconds']:.0f}/s); engage latency over {r['samples']} "
        f"p50 {ms(r['engage_p50'])} p99 {ms(r['engage_p99'])} (target p99 <= 300 ms); "
        f"baseline (watch sees the change) p50 {ms(r['baseline_p50'])} "
        f"p99 {ms(r['baseline_p99'])}; ratio p50 {r['engage_p50'] / r['baseline_p50']:.1f}x; "
        f"the runtime's own part (engage - baseline, per sample) p50 {ms(r['own_p50'])} "
        f"p99 {ms(r['own_p99'])}; "
        f"start-up to hub-synced {r['startup']:.2f} s (its CPU {max(r['startup_cpu']):.2f} s; "
        "target <= 0.5 s); "
        f"process CPU for the bulk engage {cpu:.2f} s"
        + (f" ({' / '.join(f'{c:.2f}' for c in r['cpu_bulk'])} s per replica)" if replicas else "")
        + f", {cpu * 1000 / r['bulk']:.1f} ms per cluster (multicluster-runtime: ~8 ms); "
        f"exec plugin runs {runs:.0f}, their CPU {plugin_cpu:.2f} s"
        + (
            f" ({plugin_cpu * 1000 / runs:.1f} ms per run; wall {wall * 1000 / runs:.0f} ms each)"
            if runs
            else ""
        )
        + f"; {rss}; engaged twice {r['engaged_twice']}",
        flush=True,
    )
    for line in r["profile"]:
        print(line, flush=True)


def compare_all(results: list[dict], baseline_path: Path, write: bool) -> None:
    """Each case's medians (over its runs, per runtime) beside the baseline; maybe store them."""
    import _baseline

    baseline = _baseline.load(baseline_path)
    grouped: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in results:
        grouped.setdefault((r["label"], case(r)), []).append(figures(r))
    for (label, key), runs in grouped.items():
        who = f"[{label}] " if label else ""
        print(f"{who}{key}, median of {len(runs)} run(s), against the baseline:", flush=True)
        for line in _baseline.compare(key, _baseline.medians(runs), baseline, source=baseline_path):
            print(line, flush=True)
    if write:
        first = results[0]["label"]
        cases = {
            key: _baseline.medians(runs) for (label, key), runs in grouped.items() if label == first
        }
        import subprocess

        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        meta = {
            "commit": commit or "?",
            "date": time.strftime("%Y-%m-%d"),
            "command": " ".join(["bench/runtime_engage.py", *sys.argv[1:]]),
            "machine": f"{os.cpu_count()} cores, {os.uname().machine}",
        }
        _baseline.write(baseline_path, cases, meta=meta)
        print(f"baseline: wrote {len(cases)} case(s) of [{first or 'this'}] to {baseline_path}")
