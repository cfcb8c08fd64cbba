"""The results file: runs of both modes, one flat JSON object each, keyed by their place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .record import Run


def _place(raw: dict[str, Any]) -> tuple[str, int, int, float, float]:
    """(mode, N, R, CPU quota or 0, squeeze or 0): a record of the same place replaces one
    (``RunSettings.place``, with the mode: ``agents`` records carry it)."""
    return (
        raw.get("mode") or "",
        raw["n"],
        raw["r"],
        raw.get("cpu_quota") or 0.0,
        raw.get("squeeze") or 0.0,
    )


def merge(path: Path, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results in ``path`` with these replacing the same (mode, N, R, quota, squeeze); written
    back, sorted (the manager mode's records first). Records already there are kept as they
    are, whatever their keys."""
    old = json.loads(path.read_text()) if path.exists() else []
    new = {_place(x): x for x in old}
    new.update({_place(x): x for x in results})
    merged = [new[k] for k in sorted(new)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    return merged


def manager_runs(results: list[dict[str, Any]]) -> list[Run]:
    """The manager mode's records as runs (``--mode agents`` records carry ``mode``)."""
    return [Run.from_json(x) for x in results if not x.get("mode")]
