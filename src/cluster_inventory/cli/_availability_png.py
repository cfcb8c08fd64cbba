"""The PNG timeline of ``availability -o png``: one row per member, green up, red down.

matplotlib (the ``plot`` extra) draws it on its Agg canvas, without pyplot's global state,
so nothing opens a window and nothing outlives the call. Imported only for ``-o png``.
"""

from __future__ import annotations

import datetime as dt
import io

from matplotlib import dates
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from cluster_inventory.cli._table import escape_terminal
from cluster_inventory.integrations.availability import AvailabilityReport

__all__ = ["render_png"]

_COLOURS = {"up": "#2e7d32", "down": "#c62828", "unobserved": "#bdbdbd"}
_DAY = 86400.0


def _days(when: dt.datetime) -> float:
    """The date number of ``when`` on a matplotlib axis (days since its epoch)."""
    return float(dates.date2num(when))  # type: ignore[no-untyped-call]


def render_png(report: AvailabilityReport) -> bytes:
    """The report as a PNG: a bar per member over the window, its availability beside it.

    Args:
        report: What ``read_availability`` returned (no members: an empty chart).

    Returns:
        The PNG bytes.
    """
    rows = len(report.members)
    figure = Figure(figsize=(11, 1.6 + 0.45 * max(rows, 1)), dpi=100)
    axes = figure.subplots()
    for row, member in enumerate(report.members):
        for state, colour in _COLOURS.items():
            spans = [
                (_days(start), seconds / _DAY)
                for start, seconds, kind in member.states
                if kind == state
            ]
            if spans:
                axes.broken_barh(spans, (row - 0.35, 0.7), facecolors=colour)
    labels = [
        escape_terminal(f"{m.namespace}/{m.name}  ")  # labels came from Prometheus
        + ("-" if m.availability is None else f"{m.availability * 100:.2f}%")
        for m in report.members
    ]
    axes.set_yticks(range(rows), labels=labels)
    axes.set_ylim(-0.6, max(rows, 1) - 0.4)
    axes.invert_yaxis()
    axes.set_xlim(_days(report.start), _days(report.end))
    axes.xaxis_date()
    locator = axes.xaxis.get_major_locator()
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    axes.set_title(
        f"ControlPlaneHealthy, {report.start:%Y-%m-%d %H:%M} to {report.end:%Y-%m-%d %H:%M} "
        f"UTC (step {report.step:g}s)"
    )
    axes.legend(
        handles=[Patch(color=c, label=s) for s, c in _COLOURS.items()],
        loc="upper right",
        bbox_to_anchor=(1.0, -0.12),
        ncols=3,
        frameon=False,
    )
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()
