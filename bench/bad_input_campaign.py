"""The bad-input campaign (issue 22) on its own, with its table: what was tried, what came of it.

Runs the campaign's property tests (tests/support/data/bad_input.py and the ``test_bad_*`` modules) with
``$CAMPAIGN_SCALE`` times their usual example counts and ``pytest --campaign-report``, and
prints the table: inputs tried per target (registration Secrets, file-source entries,
Cluster API objects, provider files, ClusterProfiles read by every consumer, apply
manifests; with ``--manager``, a running cluster manager fed bad Secrets), the outcomes by
error type and field (``ESCAPED ...`` would be a bug), and the objects lost (must be 0).

Usage: uv run python bench/bad_input_campaign.py [--scale 10] [--manager]
       uv run python bench/bad_input_campaign.py --smoke   (scale 0.1, pure parsers only)
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
UNIT = [
    "tests/unit/manager/test_bad_registrations.py",
    "tests/unit/credentials/test_bad_provider_files.py",
    "tests/unit/credentials/test_bad_exec_output.py",
    "tests/unit/integrations/test_bad_profiles.py",
    "tests/unit/integrations/test_bad_manifests.py",
    "tests/unit/runtime/test_bad_profile_readiness.py",
    "tests/unit/cli/test_bad_profile_printing.py",
]
MANAGER = ["tests/integration/manager/test_manager_under_bad_registrations.py"]


def main() -> int:
    """Run the campaign and print its table; exit non-zero if anything escaped or was lost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10.0, help="times the usual examples")
    parser.add_argument("--manager", action="store_true", help="also the running manager")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    scale = 0.1 if args.smoke else args.scale
    files = UNIT + (MANAGER if args.manager and not args.smoke else [])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "-q",
            "-p",
            "no:cacheprovider",
            "--campaign-report",
            "-W",
            "ignore::hypothesis.errors.HypothesisWarning",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CAMPAIGN_SCALE": str(scale)},
    )
    table = run.stdout.partition("bad-input campaign")[2]
    print(f"bad-input campaign, {scale:g}x the suite's examples")
    print("\n".join(table.splitlines()[1:]).split("\n=")[0])
    lost = re.search(r"objects lost: (\d+)", run.stdout)
    if run.returncode != 0 or lost is None or lost.group(1) != "0" or "ESCAPED" in table:
        print(run.stdout[-4000:], run.stderr[-2000:], file=sys.stderr)
        print("sanity check failed: a campaign test failed, or an object was lost", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
