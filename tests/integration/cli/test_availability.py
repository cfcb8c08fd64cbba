"""``cluster-inventory availability`` against a real Prometheus scraping through an outage.

The exporter is the product's own: :class:`ProfileConditionCollector` on the product's
metrics endpoint (``kube.endpoints``), over profiles the test changes as a manager's cache
would. Prometheus (built from its Go module) scrapes it every second; the test waits on
Prometheus's own answers, never a fixed time, and the outage comes back from its HTTP API
within a scrape interval and a step of when it happened.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import ProfileConditionCollector
from cluster_inventory.kube.endpoints import serve_endpoints
from cluster_inventory.testing import free_port
from tests.support.processes.cli import cli
from tests.support.processes.prometheus import Prometheus, prometheus
from tests.support.waiting import eventually

SCRAPE = 1.0
STEP = 1.0
METRIC = "cluster_inventory_cluster_profile_condition"


def view(name: str, status: str, reason: str) -> ProfileView:
    return ProfileView.of(
        {
            "metadata": {"namespace": "team-a", "name": name},
            "status": {
                "conditions": [{"type": "ControlPlaneHealthy", "status": status, "reason": reason}]
            },
        }
    )


async def samples(server: Prometheus, status: str, window: str) -> float:
    """How many scrapes in ``window`` said member2's status was ``status``."""
    found = await server.query(
        f'sum_over_time({METRIC}{{name="member2",condition="ControlPlaneHealthy",'
        f'status="{status}"}}[{window}])'
    )
    return float(found[0]["value"][1]) if found else 0.0


def parsed(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def test_availability_reports_an_outage_prometheus_scraped(tmp_path: Path) -> None:
    profiles = {
        "member1": view("member1", "True", "Healthy"),
        "member2": view("member2", "True", "Healthy"),
    }
    registry = CollectorRegistry()
    registry.register(ProfileConditionCollector(lambda: list(profiles.values())))
    port = free_port()
    began = time.time()
    async with (
        serve_endpoints(lambda: True, health=None, metrics=("127.0.0.1", port), registry=registry),
        prometheus(tmp_path, [f"127.0.0.1:{port}"], scrape_interval=f"{SCRAPE:g}s") as server,
    ):
        await eventually(
            lambda: _at_least(server, "true", "1m", 3), timeout=60, what="three healthy scrapes"
        )
        down = time.time()
        profiles["member2"] = view("member2", "False", "ReadyzFailed")
        await eventually(
            lambda: _at_least(server, "false", "1m", 5), timeout=60, what="five scrapes down"
        )
        up = time.time()
        profiles["member2"] = view("member2", "True", "Healthy")
        await eventually(
            lambda: _at_least(server, "true", "3s", 3), timeout=60, what="healthy again"
        )
        since = f"{math.ceil(time.time() - began) + 5}s"
        common = ("availability", "--prometheus", server.url, "--since", since, "--step", "1s")
        result = await asyncio.to_thread(cli, *common, "-o", "json")
        table = await asyncio.to_thread(cli, *common)
        png = tmp_path / "availability.png"
        plot = await asyncio.to_thread(cli, *common, "-o", "png", "--output-file", str(png))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    members = {m["name"]: m for m in doc["members"]}
    assert members["member1"]["availability"] == 1.0 and members["member1"]["outages"] == []
    (outage,) = members["member2"]["outages"]
    # Prometheus saw it at its next scrape; the report is exact to one step.
    slack = SCRAPE + STEP
    print(
        f"outage as measured: {up - down:.1f}s from {down:.1f}; Prometheus's answer: "
        f"{outage['seconds']:.0f}s from {parsed(outage['start']):.1f} "
        f"(availability {members['member2']['availability']:.4f})"
    )
    assert down - STEP <= parsed(outage["start"]) <= down + slack
    assert up - STEP <= parsed(outage["end"]) <= up + slack
    assert abs(outage["seconds"] - (up - down)) <= slack
    assert (outage["status"], outage["reason"]) == ("False", "ReadyzFailed")
    assert 0 < members["member2"]["availability"] < 1
    assert table.returncode == 0, table.stderr
    assert "ReadyzFailed" in table.stdout and "member1" in table.stdout
    assert plot.returncode == 0, plot.stderr
    assert png.read_bytes().startswith(b"\x89PNG")


async def _at_least(server: Prometheus, status: str, window: str, count: int) -> bool:
    return await samples(server, status, window) >= count


def test_an_unreachable_prometheus_is_one_clear_error() -> None:
    port = free_port()
    result = cli(
        "availability", "--prometheus", f"http://user:s3cret@127.0.0.1:{port}", "--since", "1h"
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: Prometheus http://127.0.0.1:{port}: cannot be reached")
    assert "s3cret" not in result.stderr and result.stderr.count("\n") == 1
