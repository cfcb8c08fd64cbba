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
import re
import signal
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import aiohttp
import pytest

from cluster_inventory import api, kube
from cluster_inventory.testing import ControlPlane
from tests.support.processes.wheel import make_venv, outside, run

TOKEN = "wheel-test-token"


@pytest.fixture(scope="module")
def dist(wheel_dist: Path) -> Path:
    return wheel_dist


@pytest.fixture(scope="module")
def venv(wheel_venv: Path) -> Path:
    return wheel_venv


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


def test_the_wheel_ships_the_harness_and_the_demos_crds_but_not_the_workshop(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    testing = {n.removeprefix("cluster_inventory/testing/") for n in names if "/testing/" in n}
    assert {"controlplane.py", "fleet.py", "assets.py", "pytest_plugin.py"} <= testing
    workshop = {"virtual_members.py", "argocd_check.py", "chart.py", "browser.py", "consumers.py"}
    assert not testing & workshop
    assert not [n for n in names if n.endswith(".go") or "workshop" in n]
    assert {
        "cluster_inventory/cli/demo/crds/kueue.x-k8s.io_multikueueclusters.yaml",
        "cluster_inventory/cli/demo/crds/kueue.x-k8s.io_multikueueconfigs.yaml",
    } <= names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "pytest11" not in zipfile.ZipFile(wheel).read(entry_points).decode()


_DOWNSTREAM_CONFTEST = """
import sys


def pytest_sessionfinish(session):
    heavy = ("aiohttp", "kubernetes_asyncio", "cluster_inventory")
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in heavy)
    (session.config.rootpath / "loaded.txt").write_text("\\n".join(loaded))
"""

_DOWNSTREAM_TEST = """
def test_unrelated():
    assert sorted([3, 1, 2]) == [1, 2, 3]
"""


def test_a_project_with_the_wheel_runs_its_own_tests_without_importing_aiohttp(
    tmp_path_factory: pytest.TempPathFactory, dist: Path
) -> None:
    """Installing cluster-inventory loads nothing into pytest; enabling the plugin, little."""
    (wheel,) = dist.glob("*.whl")
    venv = make_venv(tmp_path_factory.mktemp("downstream"), wheel, "pytest")
    project = tmp_path_factory.mktemp("project")
    (project / "conftest.py").write_text(_DOWNSTREAM_CONFTEST)
    (project / "test_unrelated.py").write_text(_DOWNSTREAM_TEST)
    env = outside(venv)
    pytest_cmd = (str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider")

    out = run(*pytest_cmd, cwd=project, env=env)
    assert "1 passed" in out, out
    assert (project / "loaded.txt").read_text() == ""

    # Enabled, the plugin offers its fixtures but imports the control planes' machinery only
    # when a test asks for a fleet.
    out = run(*pytest_cmd, "-p", "cluster_inventory.testing.pytest_plugin", cwd=project, env=env)
    assert "1 passed" in out, out
    loaded = (project / "loaded.txt").read_text().split()
    assert not [m for m in loaded if m.startswith(("aiohttp", "kubernetes_asyncio"))], loaded
    fixtures = run(
        *pytest_cmd,
        "-p",
        "cluster_inventory.testing.pytest_plugin",
        "--fixtures",
        cwd=project,
        env=env,
    )
    assert "test_namespace" in fixtures


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
    # The session hub has this checkout's CRDs, applied under the same field manager.
    applied = {
        f"customresourcedefinition.apiextensions.k8s.io/{c['metadata']['name']} unchanged"
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
