"""No module of the product or the workshop is over 400 lines (issue 31: one job each)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400


def test_no_module_is_over_400_lines() -> None:
    modules = [*(ROOT / "src").rglob("*.py"), *(ROOT / "workshop" / "src").rglob("*.py")]
    assert len(modules) > 100  # the tree was found
    over = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text().splitlines())) > LIMIT
    }
    assert over == {}, f"split these modules (at most {LIMIT} lines each)"
