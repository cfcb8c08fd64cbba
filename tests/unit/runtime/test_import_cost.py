"""``import cluster_inventory.runtime`` loads what a runtime needs to reach its hub, no more.

A runtime process pays every import before its first LIST (start-up to hub-synced, and
idle memory, against the Go peer's: docs/benchmarks.md, issue 48). The pydantic models,
aiohttp's server, ctypes and the kubernetes_asyncio core's unused dependencies come on
first use.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Imported at start before issue 48, needed only on paths a FleetManager may never take.
NOT_AT_START = (
    "pydantic",  # the API models: resolve_access, on the first engagement
    "cluster_inventory.api.v1alpha1",
    "aiohttp.web",  # the probe and metrics server: a Manager's run
    "cluster_inventory.kube.endpoints",
    "ctypes",  # mallopt, at kube.run
    "decimal",  # dateutil's parser: dates in typed models, which we never build
    "urllib3.connectionpool",  # basic-auth headers
)


def _loaded_after(code: str) -> dict[str, bool]:
    probe = (
        f"import sys\n{code}\n"
        "import json\n"
        "def real(name):\n"
        "    m = sys.modules.get(name)\n"
        "    return m is not None and m.__dict__.get('_ci_loaded', True)\n"
        f"print(json.dumps({{n: real(n) for n in {list(NOT_AT_START)!r}}}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    loaded: dict[str, bool] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_importing_the_runtime_loads_no_model_server_or_ctypes() -> None:
    loaded = _loaded_after("import cluster_inventory.runtime")
    assert [name for name, yes in loaded.items() if yes] == []


def test_building_a_fleet_manager_loads_none_of_them_either() -> None:
    # The constructor (provider file, metrics, pool) is start-up too: no models before the
    # first profile is resolved.
    code = (
        "import asyncio, json, os, tempfile\n"
        "from prometheus_client import CollectorRegistry\n"
        "from cluster_inventory import kube\n"
        "from cluster_inventory.runtime import FleetManager\n"
        "path = os.path.join(tempfile.mkdtemp(), 'providers.json')\n"
        "open(path, 'w').write(json.dumps({'providers': [{'name': 'secretreader',"
        " 'execConfig': {'apiVersion': 'client.authentication.k8s.io/v1',"
        " 'command': 'true'}}]}))\n"
        "async def main():\n"
        "    conn = kube.ClusterConnection(server='https://127.0.0.1:1')\n"
        "    async with await kube.new_client(conn) as hub:\n"
        "        FleetManager(hub, path, namespaces=['a'], registry=CollectorRegistry())\n"
        "asyncio.run(main())\n"
    )
    loaded = _loaded_after(code)
    assert [name for name, yes in loaded.items() if yes] == []


def test_resolving_access_loads_the_models_once() -> None:
    from cluster_inventory.credentials import _access

    assert _access._models() is _access._models()
    model, _, _ = _access._models()
    assert model.__name__ == "ClusterProfile"
