"""Sharded cluster manager replicas as processes, and members each in its own inventory.

:func:`replica` starts ``cluster-inventory manager run --sharding`` with short shard Lease
timings, :func:`stopped` stops them, :func:`metric_families` and :func:`scraped` read their
``/metrics``;
:func:`own_inventories` registers each name with a session fleet member, in an
inventory of its own (so registrations reaching one real member are not duplicates of each
other). Shared by the sharding tests under ``tests/integration/manager/``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.manager import registration_secret
from cluster_inventory.testing import Fleet

CLI = Path(sys.executable).parent / "cluster-inventory"


def replica(
    name: str, manager: str, namespace: str, kubeconfig: str, *, metrics: str = "0"
) -> subprocess.Popen[str]:
    """Start replica ``name`` (its ``POD_NAME``) of cluster manager ``manager``.

    Args:
        metrics: ``--metrics-bind-address`` (``0``: none; ``127.0.0.1:PORT`` to scrape it).
    """
    return subprocess.Popen(
        [
            str(CLI),
            "manager",
            "run",
            "--kubeconfig",
            kubeconfig,
            "--name",
            manager,
            "--namespace",
            namespace,
            "--member-namespace",
            namespace,
            "--sharding",
            "--shard-lease-duration",
            "3",
            "--shard-renew-interval",
            "1",
            "--probe-interval",
            "1",
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            metrics,
        ],
        env={**os.environ, "POD_NAME": name},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def stopped(replicas: dict[str, subprocess.Popen[str]]) -> dict[str, tuple[str, str]]:
    """SIGTERM every replica still running; each one's (stdout, stderr) once it exited."""
    for proc in replicas.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    return {n: await asyncio.to_thread(p.communicate, timeout=30) for n, p in replicas.items()}


async def metric_families(port: int) -> list[Metric]:
    """Every metric family a replica's ``/metrics`` (on 127.0.0.1, port ``port``) exports.

    Raises:
        aiohttp.ClientError: ``/metrics`` does not answer.
    """
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        text = await response.text()
    return list(text_string_to_metric_families(text))


async def scraped(port: int, family: str) -> float:
    """The value of counter ``family`` (the sum of its ``_total`` samples) on a replica.

    Raises:
        AssertionError: The replica does not export ``family``.
        aiohttp.ClientError: ``/metrics`` does not answer.
    """
    for found in await metric_families(port):
        if found.name == family:
            return sum(s.value for s in found.samples if s.name == f"{family}_total")
    raise AssertionError(f"replica on port {port} exports no metric {family!r}")


async def own_inventories(
    hub: kube.ApiClient, fleet: Fleet, namespace: str, manager: str, names: list[str]
) -> dict[str, str]:
    """Register each of ``names`` (the fleet's members in turn) in an inventory of its own.

    Returns:
        Registration name -> its inventory namespace.
    """
    members = list(fleet.members.values())
    inventories = {}
    for i, name in enumerate(names):
        ns = f"{namespace}-{name}"[:63]
        inventories[name] = ns
        await kube.apply(
            hub,
            kube.NAMESPACES,
            {"metadata": {"name": ns, "labels": {LABEL_CLUSTER_SET: f"{manager}-{name}"}}},
            field_manager="test",
        )
        text = yaml.safe_dump(members[i % len(members)].kubeconfig())
        secret = registration_secret(name, namespace, text, [f"{manager}-{name}"])
        await kube.apply(hub, kube.SECRETS, secret, field_manager="test")
    return inventories
