"""A real Prometheus for tests: built from its Go module, scraping loopback targets.

``prometheus`` comes from ``cluster-inventory-workshop install-assets`` (``make assets``),
like promtool; a missing binary fails with the message saying how to build it. The server
keeps its TSDB in the test's directory and is stopped (SIGTERM, then SIGKILL) on exit.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from cluster_inventory.testing import ManagedProcess, free_port
from cluster_inventory_workshop.tools import find_tool
from tests.support.waiting import eventually


class Prometheus:
    """A running Prometheus: its base URL and an instant-query helper."""

    def __init__(self, url: str, process: ManagedProcess) -> None:
        self.url = url
        self.process = process

    async def query(self, promql: str) -> list[dict[str, Any]]:
        """The ``data.result`` of an instant query (raises on an error answer)."""
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{self.url}/api/v1/query", params={"query": promql}) as response,
        ):
            body = json.loads(await response.text())
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


@contextlib.asynccontextmanager
async def prometheus(
    workdir: Path, targets: list[str], *, scrape_interval: str = "1s"
) -> AsyncIterator[Prometheus]:
    """Run Prometheus scraping ``targets`` (``host:port``, path ``/metrics``) until exit."""
    binary = find_tool("prometheus")
    config = {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval},
        "scrape_configs": [{"job_name": "test", "static_configs": [{"targets": targets}]}],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = ManagedProcess(
        "prometheus",
        [
            str(binary),
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        workdir / "prometheus.log",
    )
    process.start()
    server = Prometheus(f"http://127.0.0.1:{port}", process)
    try:

        async def ready() -> bool:
            assert process.running, process.log_tail()
            try:
                async with (
                    aiohttp.ClientSession() as http,
                    http.get(f"{server.url}/-/ready") as response,
                ):
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, timeout=60, what="Prometheus ready")
        yield server
    finally:
        await process.stop()
