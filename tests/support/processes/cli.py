"""Run our console scripts as a user does: a subprocess with no standard input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 180,
    stdin: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``cluster-inventory ARGS`` with this interpreter; never raises on a non-zero exit.

    Standard input is empty, or the file ``stdin`` (its bytes as they are).
    """
    with stdin.open("rb") if stdin is not None else open(os.devnull, "rb") as handle:
        return subprocess.run(
            [sys.executable, "-m", "cluster_inventory.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
            stdin=handle,
        )


def cli_process(*args: str) -> subprocess.Popen[bytes]:
    """``cluster-inventory ARGS`` started in the background (stderr piped, the rest closed).

    The caller stops it (``send_signal``, ``kill``) and reaps it (``communicate``).
    """
    return subprocess.Popen(
        [sys.executable, "-m", "cluster_inventory.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )


def scripts_dir() -> Path:
    """Where this environment's console scripts (kubectl-inventory, ...) are installed."""
    return Path(sys.executable).parent
