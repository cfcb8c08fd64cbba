"""Output in kubectl's shapes.

Tables are plain text laid out like kubectl's tabwriter (upper-case headers, columns padded by
three spaces, ``<none>`` for empty cells), never wrapped, so they read the same on a terminal,
in a pipe and in a golden test.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_table"]

_PADDING = 3


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Lay out ``rows`` under ``headers`` as kubectl does.

    Args:
        headers: Column titles; shown upper-case.
        rows: Cells as strings; an empty cell shows as ``<none>``.

    Returns:
        The table, one line per row, with a trailing newline.
    """
    cells = [[h.upper() for h in headers]] + [[c if c else "<none>" for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(widths[i] + _PADDING) for i, cell in enumerate(row[:-1])]
        lines.append("".join(padded) + row[-1])
    return "\n".join(lines) + "\n"
