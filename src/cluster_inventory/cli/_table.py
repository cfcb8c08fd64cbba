"""kubectl's table: the layout of ``kubectl get`` and its AGE column.

Tables are plain text laid out like kubectl's tabwriter (upper-case headers, columns padded
by three spaces, ``<none>`` for empty cells), never wrapped, so they read the same on a
terminal, in a pipe and in a golden test. What a cell shows may come from a member (a
property value, a condition message), so no character in it reaches the terminal as a
control: :func:`escape_terminal` and :func:`table_cell` do what kubectl's printers do
(``printers.EscapeTerminal`` and the table printer's cut at a line break), and more. Every
other output format of ``get`` is kubectl's own: the CLI runs kubectl for it
(:mod:`cluster_inventory.cli._kubectl`).

Only the standard library is imported, so the CLI's table path stays cheap to start.
"""

from __future__ import annotations

from collections.abc import Sequence

from cluster_inventory._durations import age, human_duration

__all__ = ["age", "escape_terminal", "format_table", "human_duration", "table_cell"]

_PADDING = 3


def _escapes() -> dict[int, str]:
    table = {code: "^" + chr(code + 64) for code in range(0x20)}  # caret notation: ^@ .. ^_
    table[0x7F] = "^?"
    table[0x0D] = "\\r"  # kubectl's
    table[0x0A] = "\\n"
    table[0x09] = "\\t"
    for code in (*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)):
        table[code] = f"\\u{code:04x}"  # C1 controls; bidirectional overrides and isolates
    return table


#: ESC is ``^[`` and CR ``\r`` as kubectl prints them (``printers.EscapeTerminal``, the fix of
#: kubernetes#101695); the rest of C0 in the same caret notation, DEL ``^?``, LF ``\n``, TAB
#: ``\t``, and the C1 controls and Unicode's bidirectional overrides as ``\uXXXX``, which a
#: terminal may also act on (CSI is 0x9B; an override reorders what follows it).
_ESCAPES = _escapes()


def escape_terminal(text: str) -> str:
    r"""``text`` with every character a terminal acts on written out (:data:`_ESCAPES`).

    An ANSI escape sequence so prints as ``^[[31m``: visible, inert. The text stays on one
    line (a line break is ``\n``), so a value cannot forge a line of the output.
    """
    return text.translate(_ESCAPES)


def table_cell(text: str) -> str:
    r"""A table cell as kubectl's table printer shows it: cut at its first line break.

    kubectl (``cli-runtime/pkg/printers/tableprinter.go``) prints a cell up to its first
    ``\n``, ``\r`` or ``\f`` followed by ``...``, and escapes the rest
    (:func:`escape_terminal`).
    """
    cut = min((i for i in (text.find(c) for c in "\n\r\f") if i >= 0), default=-1)
    return escape_terminal(text if cut < 0 else text[:cut]) + ("..." if cut >= 0 else "")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Lay out ``rows`` under ``headers`` as kubectl does.

    Args:
        headers: Column titles; shown upper-case.
        rows: Cells as strings; an empty cell shows as ``<none>``, and each is shown as
            :func:`table_cell` makes it (kubectl's cut at a line break, control
            characters escaped).

    Returns:
        The table, one line per row, with a trailing newline.
    """
    cells = [[h.upper() for h in headers]]
    cells += [[table_cell(c) if c else "<none>" for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(widths[i] + _PADDING) for i, cell in enumerate(row[:-1])]
        lines.append("".join(padded) + row[-1])
    return "\n".join(lines) + "\n"
