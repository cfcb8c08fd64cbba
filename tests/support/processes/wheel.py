"""The wheel as a user gets it: built once per session, installed in a fresh venv elsewhere.

``tests/integration/conftest.py`` turns these into the session fixtures ``wheel_dist`` (the
wheel and sdist ``uv build`` makes from this checkout) and ``wheel_venv`` (a new virtual
environment in a temporary directory with only the wheel and its dependencies), so the
packaging tests and the demo's end-to-end test share one build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO


def uv() -> list[str]:
    """The uv that runs this suite (``uv run`` sets $UV), else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build and install the wheel: python3 -m pip install uv")
    return [found]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run a command with no stdin; fail the test with its output unless it exits 0."""
    done = subprocess.run(
        list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_dist(out: Path) -> Path:
    """``uv build`` of the checkout (wheel and sdist) into ``out``."""
    run(*uv(), "build", "--out-dir", str(out), str(REPO), cwd=REPO)
    return out


def make_venv(where: Path, wheel: Path, *extra: str) -> Path:
    """A fresh virtual environment under ``where`` with ``wheel`` (and ``extra``) installed."""
    env_dir = where / "venv"
    run(*uv(), "venv", "--python", sys.executable, str(env_dir), cwd=where)
    python = str(env_dir / "bin" / "python")
    run(*uv(), "pip", "install", "--python", python, str(wheel), *extra, cwd=where)
    return env_dir


def outside(venv: Path) -> dict[str, str]:
    """An environment that sees only the venv: no checkout on sys.path, no project venv, no Go.

    ``PATH`` is the venv's scripts, ``/usr/bin`` and ``/bin``: Go, when installed as its
    project ships it (``/usr/local/go``), is not on it.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV")}
    env = {k: v for k, v in env.items() if not k.startswith(("GO", "PYTEST"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env["COLUMNS"] = "200"  # rich's help boxes would cut long option names
    return env
