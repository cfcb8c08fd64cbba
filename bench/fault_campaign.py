"""The network fault matrix (issue 32): each pair x each Toxiproxy fault, and what came of it.

Runs tests/integration/faults/test_fault_matrix.py (tests/support/network/faults.py holds the cells) with
``pytest --fault-report`` and prints the matrix: for every pair (manager-member,
manager-hub, runtime-member, apply-member) and fault (latency, bandwidth, reset-peer,
half-open, slow-close, disabled) whether the process stayed up, seconds from the heal until
the change made during the fault showed, objects lost, objects written twice, and what the
process said. The cells assert their own invariants: a failing cell fails the run.

Usage: uv run python bench/fault_campaign.py [-k EXPR]
       uv run python bench/fault_campaign.py --smoke   (the proxy disabled, two pairs)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from _common import SMOKE_HELP

ROOT = Path(__file__).resolve().parents[1]
MATRIX = "tests/integration/faults/test_fault_matrix.py"


def main() -> int:
    """Run the matrix and print it; exit non-zero if a cell failed or nothing ran."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="pytest -k expression choosing cells")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    select = "disabled and (manager_member or apply_member)" if args.smoke else args.k
    run = subprocess.run(
        [
            sys.executable, "-m", "pytest", MATRIX, "-q", "-p", "no:cacheprovider",
            "--fault-report", *(["-k", select] if select else []),
        ],
        cwd=ROOT, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    table = run.stdout.partition("fault matrix")[2]
    rows = [line for line in table.splitlines()[1:] if line.strip()]
    rows = rows[: next((i for i, r in enumerate(rows) if r.startswith("=")), len(rows))]
    print("network fault matrix (Toxiproxy between a process and one server)")
    print("\n".join(rows))
    cells = [r for r in rows[1:] if re.match(r"^\S+-\S+\s", r)]
    if run.returncode != 0 or not cells:
        print(run.stdout[-6000:], run.stderr[-2000:], file=sys.stderr)
        print("sanity check failed: a cell failed, or no cell ran", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
