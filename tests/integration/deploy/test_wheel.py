"""The wheel and sdist alone: built, checked, installed into a fresh venv outside the checkout.

``pip install cluster-inventory`` must be enough for the CLI, the kubectl plugin, the exec
plugin and the CRDs: the wheel is built with ``uv build``, its metadata checked with ``twine
check``, installed with its dependencies into a new virtual environment in a temporary
directory, and its console scripts run from there against the real hub (the CRDs it ships
applied with ``cluster-inventory crds apply``, a token read by the exec plugin).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import aiohttp
import pytest

from cluster_inventory import api, kube
from cluster_inventory.testing import ControlPlane
from tests.integration.deploy.test_deploy_manifests import REPO

TOKEN = "wheel-test-token"


def uv() -> list[str]:
    """The uv that runs this suite (``uv run`` sets $UV), else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build and install the wheel: python3 -m pip install uv")
    return [found]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(*uv(), "build", "--out-dir", str(out), str(REPO), cwd=REPO)
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment (no project, no dev tools) with only the wheel installed."""
    where = tmp_path_factory.mktemp("venv")
    env_dir = where / "venv"
    run(*uv(), "venv", "--python", sys.executable, str(env_dir), cwd=where)
    (wheel,) = dist.glob("*.whl")
    run(*uv(), "pip", "install", "--python", str(env_dir / "bin" / "python"), str(wheel), cwd=where)
    yield env_dir


def outside(venv: Path) -> dict[str, str]:
    """An environment that sees only the venv: no checkout on sys.path, no project venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env["COLUMNS"] = "200"  # rich's help boxes would cut long option names
    return env


def test_uv_builds_a_wheel_and_an_sdist_that_twine_accepts(dist: Path) -> None:
    files = sorted(p.name for p in dist.iterdir() if p.name != ".gitignore")  # uv adds one
    ours = version("cluster-inventory")
    assert files == [
        f"cluster_inventory-{ours}-py3-none-any.whl",
        f"cluster_inventory-{ours}.tar.gz",
    ]
    out = run(
        sys.executable,
        "-m",
        "twine",
        "check",
        "--strict",
        *map(str, dist.glob("cluster_inventory-*")),
        cwd=dist,
    )
    assert out.count("PASSED") == 2, out


def test_the_wheel_ships_the_crds_and_type_information(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    crds = {
        f"cluster_inventory/api/crds/{c}" for c in ("multicluster.x-k8s.io_clusterprofiles.yaml",)
    }
    assert crds <= names
    assert len([n for n in names if n.startswith("cluster_inventory/api/crds/")]) == len(
        api.load_crds()
    )
    assert "cluster_inventory/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "charts/", "deploy/"))]


def test_console_scripts_run_from_the_fresh_venv(venv: Path, tmp_path: Path) -> None:
    env = outside(venv)
    out = run("cluster-inventory", "version", cwd=tmp_path, env=env)
    assert out.splitlines()[0] == f"cluster-inventory {version('cluster-inventory')}"
    assert "register" in run("kubectl-inventory", "--help", cwd=tmp_path, env=env)
    help_text = run("cluster-inventory", "manager", "run", "--help", cwd=tmp_path, env=env)
    assert "--inventory-namespaces-only" in help_text
    # The installed package is the venv's, not the checkout's.
    where = run(
        str(venv / "bin" / "python"),
        "-c",
        "import cluster_inventory; print(cluster_inventory.__file__)",
        cwd=tmp_path,
        env=env,
    )
    assert where.startswith(str(venv)), where


def test_crds_apply_from_the_wheel_reaches_the_hub(
    venv: Path, hub: ControlPlane, tmp_path: Path
) -> None:
    out = run(
        "cluster-inventory",
        "crds",
        "apply",
        "--kubeconfig",
        str(hub.kubeconfig_path),
        cwd=tmp_path,
        env=outside(venv),
    )
    applied = {
        f"customresourcedefinition.apiextensions.k8s.io/{c['metadata']['name']} applied"
        for c in api.load_crds()
    }
    assert set(out.splitlines()) == applied


async def test_the_exec_plugin_from_the_wheel_reads_a_token_secret(
    venv: Path, hub: ControlPlane, test_namespace: str, tmp_path: Path
) -> None:
    async with await hub.client() as admin:
        await kube.create(
            admin,
            kube.SECRETS,
            {
                "metadata": {"name": "c1", "namespace": test_namespace},
                "data": {"token": base64.b64encode(TOKEN.encode()).decode()},
            },
        )
    info = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {"server": "https://member.invalid", "config": {"clusterName": "c1"}},
        },
    }
    env = outside(venv) | {"KUBERNETES_EXEC_INFO": json.dumps(info)}
    out = run(
        "cluster-inventory-secretreader",
        "--namespace",
        test_namespace,
        "--kubeconfig",
        str(hub.kubeconfig_path),
        cwd=tmp_path,
        env=env,
    )
    credential = json.loads(out)
    assert credential["kind"] == "ExecCredential"
    assert credential["status"]["token"] == TOKEN


async def test_the_dashboard_from_the_wheel_serves_every_asset_it_links(
    venv: Path, hub: ControlPlane, test_namespace: str, tmp_path: Path
) -> None:
    """Templates, stylesheet, htmx and its licence are files of the wheel: nothing from a CDN."""
    proc = await asyncio.create_subprocess_exec(
        "cluster-inventory",
        "dashboard",
        "-n",
        test_namespace,
        "--address",
        "127.0.0.1:0",
        "--kubeconfig",
        str(hub.kubeconfig_path),
        cwd=tmp_path,
        env=outside(venv),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
        assert line.startswith("dashboard: "), line
        url = line.removeprefix("dashboard: ").strip()
        async with aiohttp.ClientSession() as http:
            async with http.get(url) as page:
                text = await page.text()
            linked = re.findall(r'(?:src|href)="([^"#]+)"', text)
            assert {"static/htmx.min.js", "static/dashboard.css"} <= set(linked)
            for path in [*linked, "static/LICENSE.htmx.txt", "static/LICENSE.htmx-ext-sse.txt"]:
                assert "//" not in path, path  # no other origin
                async with http.get(url + path) as asset:
                    assert asset.status == 200, path
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0
