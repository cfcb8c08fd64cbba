"""A benchmark's committed baseline: figures of this machine kind, and this run beside them.

A baseline file (``bench/results/<benchmark>.json``) holds, per case (e.g.
``distinct N=1000 plugin=go``), the figures a run of the benchmark measured on this machine
kind, with the commit and command that measured them. A run prints each of its figures beside
the baseline's, with the ratio, and says plainly which ones are over it by more than the
limit (25%): a regression cannot pass unseen, and no test asserts a time (docs/benchmarks.md).
Figures are "lower is better" (seconds, milliseconds, MiB).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

#: A figure more than this many times its baseline is called out.
LIMIT = 1.25


def load(path: Path) -> dict:
    """The baseline file at ``path`` (``{"cases": {}}`` if there is none yet)."""
    if not path.exists():
        return {"cases": {}}
    return json.loads(path.read_text())


def compare(case: str, figures: dict[str, float], baseline: dict, *, source: Path) -> list[str]:
    """Lines comparing ``figures`` of ``case`` with the baseline's, the verdict last.

    Args:
        case: The case's key in the baseline.
        figures: Name -> value (lower is better).
        baseline: What :func:`load` returned.
        source: The baseline file, named in the lines.

    Returns:
        One line per figure the baseline has (``name: now X, baseline Y, ratio Z``) and a last
        line saying which figures are over ``LIMIT`` times their baseline, or that none is;
        or one line saying the baseline has no such case.
    """
    known = baseline.get("cases", {}).get(case)
    if not known:
        return [f"baseline: {source} has no case {case!r} (run with --write-baseline to add it)"]
    lines, over = [], []
    for name, value in figures.items():
        base = known.get(name)
        if not base:
            continue
        ratio = value / base
        lines.append(f"  {name}: now {value:.4g}, baseline {base:.4g}, ratio {ratio:.2f}")
        if ratio > LIMIT:
            over.append(f"{name} {ratio:.2f}x")
    where = f"baseline {source} ({known.get('_commit', '?')}, {known.get('_date', '?')})"
    if over:
        lines.append(
            f"  OVER THE BASELINE by more than {LIMIT - 1:.0%}: {', '.join(over)} [{case}; {where}]"
        )
    else:
        lines.append(f"  within {LIMIT - 1:.0%} of the {where} on every figure [{case}]")
    return lines


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each figure over ``runs`` (every run has the same names)."""
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def write(path: Path, cases: dict[str, dict[str, float]], *, meta: dict[str, str]) -> None:
    """Merge ``cases`` (each with ``meta`` as ``_``-prefixed keys) into the file at ``path``."""
    data = load(path)
    for case, figures in cases.items():
        data["cases"][case] = {**{f"_{k}": v for k, v in meta.items()}, **figures}
    data["cases"] = dict(sorted(data["cases"].items()))
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
