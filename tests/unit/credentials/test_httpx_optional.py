"""httpx is an optional extra: without it the rest of credentials works, its adapter says why."""

from __future__ import annotations

import subprocess
import sys

import pytest

WITHOUT_HTTPX = "import sys\nsys.modules['httpx'] = None  # as if it were not installed\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_HTTPX + code], capture_output=True, text=True, check=False
    )


def test_connect_and_the_cache_import_without_httpx():
    proc = _run(
        "from cluster_inventory.credentials import CredentialCache, connect, resolve_access\n"
        "import cluster_inventory.kube\n"
        "print('ok')"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


@pytest.mark.parametrize("name", ["httpx_client", "ExecCredentialAuth"])
def test_the_httpx_adapter_names_the_extra_when_httpx_is_absent(name):
    proc = _run(f"from cluster_inventory.credentials import {name}")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ")
    assert "pip install 'cluster-inventory[httpx]'" in last


def test_importing_credentials_does_not_import_httpx():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, cluster_inventory.credentials as c\n"
            "c.connect, c.CredentialCache\n"
            "print('httpx' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout == "False\n"
