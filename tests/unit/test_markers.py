"""The ``integration`` marker is given by directory (``tests/integration/conftest.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]

#: Collects the whole suite with ``-m integration`` and prints what was selected and what
#: was deselected, as node ids.
COLLECT = """
import json, sys
import pytest

class Record:
    selected, deselected = [], []

    def pytest_deselected(self, items):
        self.deselected.extend(i.nodeid for i in items)

    def pytest_collection_finish(self, session):
        self.selected.extend(i.nodeid for i in session.items)

record = Record()
code = pytest.main(
    ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "integration", "tests"],
    plugins=[record],
)
print("\\n" + json.dumps({"code": int(code), "selected": record.selected,
                          "deselected": record.deselected}))
"""


def test_integration_marker_selects_exactly_tests_integration_and_not_integration_tests_unit():
    proc = subprocess.run(
        [sys.executable, "-c", COLLECT], cwd=ROOT, capture_output=True, text=True, check=False
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    selected, deselected = result["selected"], result["deselected"]
    assert selected and deselected
    assert [n for n in selected if not n.startswith("tests/integration/")] == []
    assert [n for n in deselected if not n.startswith("tests/unit/")] == []
    assert (
        "tests/unit/test_markers.py::"
        + (
            "test_integration_marker_selects_exactly_tests_integration_and_not_integration_tests_unit"
        )
        in deselected
    )
