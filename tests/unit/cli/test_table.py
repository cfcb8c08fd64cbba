"""kubectl's table layout and AGE column (``cli._table``)."""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory import _durations
from cluster_inventory.cli import _table
from cluster_inventory.cli._table import (
    age,
    escape_terminal,
    format_table,
    human_duration,
    table_cell,
)

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
YEAR = 365 * DAY


def test_module_imports_only_the_standard_library() -> None:
    # _table and the durations it prints (cluster_inventory._durations, shared with the
    # dashboard): the standard library only, so the table path stays cheap to start.
    for module in (_table, _durations):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        imported = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
        top = {name.split(".")[0] for name in imported - {"cluster_inventory._durations"}}
        assert top - {"__future__"} <= set(sys.stdlib_module_names), module.__name__


def test_format_table_is_unchanged() -> None:
    out = format_table(["name", "age"], [["a", "5m"], ["long-name", ""]])
    assert out == "NAME        AGE\na           5m\nlong-name   <none>\n"


# --- human_duration ----------------------------------------------------------------------------

# The boundaries of apimachinery's HumanDuration (duration_test.go), in seconds.
DURATIONS = [
    (-2.0, "<invalid>"),
    (-1e6, "<invalid>"),
    (-1.999999999, "0s"),
    (-1.0, "0s"),
    (-0.5, "0s"),
    (0, "0s"),
    (0.999, "0s"),
    (1, "1s"),
    (70, "70s"),
    (2 * MINUTE - 0.001, "119s"),
    (2 * MINUTE, "2m"),
    (2 * MINUTE + 1, "2m1s"),
    (190, "3m10s"),
    (10 * MINUTE - 0.001, "9m59s"),
    (10 * MINUTE, "10m"),
    (10 * MINUTE + 1, "10m"),
    (70 * MINUTE, "70m"),
    (3 * HOUR - 0.001, "179m"),
    (3 * HOUR, "3h"),
    (3 * HOUR + MINUTE, "3h1m"),
    (8 * HOUR - 0.001, "7h59m"),
    (8 * HOUR, "8h"),
    (8 * HOUR + 59 * MINUTE, "8h"),
    (47 * HOUR, "47h"),
    (2 * DAY - 0.001, "47h"),
    (2 * DAY, "2d"),
    (49 * HOUR, "2d1h"),
    (8 * DAY - 0.001, "7d23h"),
    (8 * DAY, "8d"),
    (8 * DAY + 23 * HOUR, "8d"),
    (367 * DAY, "367d"),
    (2 * YEAR - 0.001, "729d"),
    (2 * YEAR, "2y"),
    (2 * YEAR + DAY - 0.001, "2y"),
    (2 * YEAR + DAY, "2y1d"),
    (2 * YEAR + 25 * HOUR, "2y1d"),
    (3 * YEAR, "3y"),
    (8 * YEAR - 0.001, "7y364d"),
    (8 * YEAR, "8y"),
    (8 * YEAR + 2 * HOUR, "8y"),
    (8 * YEAR + 200 * DAY, "8y"),
    (12 * YEAR, "12y"),
]


@pytest.mark.parametrize(("seconds", "expected"), DURATIONS)
def test_human_duration_matches_apimachinery(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -math.inf])
def test_human_duration_rejects_non_finite(seconds: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        human_duration(seconds)


UNIT_SECONDS = {"s": 1, "m": MINUTE, "h": HOUR, "d": DAY, "y": YEAR}


def read_back(text: str) -> tuple[int, int]:
    """The seconds a HumanDuration text stands for, and the size of its last unit."""
    parts = re.findall(r"(\d+)([smhdy])", text)
    assert "".join(n + u for n, u in parts) == text
    return sum(int(n) * UNIT_SECONDS[u] for n, u in parts), UNIT_SECONDS[parts[-1][1]]


@given(st.integers(min_value=0, max_value=15 * YEAR))
def test_human_duration_truncates_to_its_last_unit(seconds: int) -> None:
    shown, unit = read_back(human_duration(seconds))
    assert 0 <= seconds - shown < unit


@given(st.integers(min_value=0, max_value=15 * YEAR), st.integers(min_value=0, max_value=YEAR))
def test_human_duration_never_goes_backwards(seconds: int, later: int) -> None:
    assert read_back(human_duration(seconds))[0] <= read_back(human_duration(seconds + later))[0]


# --- age ---------------------------------------------------------------------------------------

NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2026-11-23T12:00:00Z", "0s"),
        ("2026-11-23T11:54:30Z", "5m30s"),
        ("2026-11-23T10:00:00Z", "120m"),
        ("2026-11-23T08:00:00Z", "4h"),
        ("2026-11-20T10:00:00Z", "3d2h"),
        ("2024-11-23T12:00:00Z", "2y"),
        ("2026-11-23T12:00:01Z", "0s"),  # a second of clock skew
        ("2026-11-23T12:00:05Z", "<invalid>"),
        ("2026-11-23T13:54:30+02:00", "5m30s"),
        ("2026-11-23T06:54:30-05:00", "5m30s"),
        ("2026-11-23T11:54:29.999999999Z", "5m30s"),  # MicroTime, fraction truncated
        ("2026-11-23t11:54:30z", "5m30s"),
        (None, "<unknown>"),
        ("", "<unknown>"),
        ("0001-01-01T00:00:00Z", "<unknown>"),  # Go's zero time
        ("yesterday", "<unknown>"),
        ("2026-11-23", "<unknown>"),
        ("2026-11-23 11:54:30Z", "<unknown>"),
        ("2026-11-23T11:54:30", "<unknown>"),
        ("2026-13-01T00:00:00Z", "<unknown>"),
        ("2026-11-23T11:54:30+24:00", "<unknown>"),
    ],
)
def test_age_of_a_creation_timestamp(timestamp: str | None, expected: str) -> None:
    assert age(timestamp, NOW) == expected


def test_age_takes_a_naive_now_as_utc() -> None:
    assert age("2026-11-23T11:00:00Z", NOW.replace(tzinfo=None)) == "60m"


def test_age_defaults_to_the_current_time() -> None:
    created = dt.datetime.now(dt.UTC) - dt.timedelta(days=10, hours=1)
    assert age(created.strftime("%Y-%m-%dT%H:%M:%SZ")) == "10d"


def test_control_characters_are_escaped_as_kubectl_does_and_the_rest_likewise() -> None:
    assert escape_terminal("\x1b[31mred\x1b[0m") == "^[[31mred^[[0m"  # kubectl's ^[
    assert escape_terminal("a\rb") == "a\\rb"  # kubectl's \r
    assert escape_terminal("\x07\x08\x00\x7f") == "^G^H^@^?"
    assert escape_terminal("a\nb\tc") == "a\\nb\\tc"
    assert escape_terminal("\x9b31m\u202egnp.exe") == "\\u009b31m\\u202egnp.exe"
    assert escape_terminal("région ✓ 日本") == "région ✓ 日本"


def test_a_cell_is_cut_at_its_first_line_break_as_kubectls_table_printer_does() -> None:
    assert table_cell("ok\nedge-2   True") == "ok..."
    assert table_cell("a\x1b[2Jb\rc") == "a^[[2Jb..."
    assert table_cell("one\fpage") == "one..."
    assert table_cell("plain") == "plain"


@given(st.lists(st.lists(st.text(max_size=12), min_size=2, max_size=2), min_size=1, max_size=4))
def test_no_cell_puts_a_control_character_or_a_line_of_its_own_in_a_table(
    rows: list[list[str]],
) -> None:
    lines = format_table(["a", "b"], rows).split("\n")
    assert len(lines) == len(rows) + 2 and lines[-1] == ""
    for line in lines:
        assert not [c for c in line if unicodedata.category(c) == "Cc"], repr(line)
