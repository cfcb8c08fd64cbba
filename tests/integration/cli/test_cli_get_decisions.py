"""`get placementdecisions` on the real hub: slices the scheduler wrote, and another's.

The placement scheduler runs in the test and publishes 130 chosen profiles as two slices
(100 + 30); a second decision, written as another scheduler would (OCM's mirror), names a
profile of another namespace. The CLI's table and `-o wide` are read cell by cell; every
other format must be kubectl's own output, and `kubectl inventory` (the plugin, found by
kubectl on PATH) must print what `cluster-inventory` prints.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_PLACEMENT_KEY,
)
from cluster_inventory.cli._kubectl import KUBECTL_ENV
from cluster_inventory.integrations.placement import SCHEDULER_NAME, PlacementScheduler
from cluster_inventory.testing import Fleet, find_binary
from tests.support.hub.placements import bounded, placement, profile
from tests.support.processes.binaries import hub_kubectl
from tests.support.processes.cli import cli, scripts_dir
from tests.support.waiting import eventually

_AGE = re.compile(r"^(\d+[smhdy])+$")
_OTHER_SCHEDULER = "open-cluster-management.io/mirror"


def _cells(table: str) -> list[list[str]]:
    """The table's rows split into cells (no cell here holds a space)."""
    return [line.split() for line in table.splitlines()]


def _no_age(table: str, column: int) -> list[list[str]]:
    rows = _cells(table)
    for row in rows[1:]:
        assert _AGE.match(row[column]), row
        row[column] = "<age>"
    return rows


@pytest.fixture(scope="module")
async def decisions(fleet: Fleet) -> AsyncIterator[str]:
    """A namespace holding slices web-0 (100 clusters) and web-1 (30) of our scheduler,
    and mirror-0 of another naming ``other/far-away``; yields the namespace."""
    ns = "get-decisions"
    async with await fleet.hub.client() as hub:
        await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="test")
        await bounded(
            [
                profile(hub, ns, f"eu-{i:03d}", labels={"env": "prod"}, properties={"r": "eu"})
                for i in range(130)
            ]
        )
        await placement(hub, ns, "web", clusterSelector={"matchLabels": {"env": "prod"}})
        await kube.apply(
            hub,
            kube.PLACEMENT_DECISIONS,
            {
                "metadata": {
                    "name": "mirror-0",
                    "namespace": ns,
                    "labels": {
                        LABEL_DECISION_KEY: "mirror",
                        LABEL_DECISION_INDEX: "0",
                        LABEL_PLACEMENT_KEY: "ocm-placement",
                    },
                },
                "schedulerName": _OTHER_SCHEDULER,
                "decisions": [
                    {"clusterProfileRef": {"name": "eu-000"}},
                    {"clusterProfileRef": {"name": "far-away", "namespace": "other"}},
                ],
            },
            field_manager="test",
        )
        scheduler = PlacementScheduler(hub, namespaces=[ns], registry=CollectorRegistry())
        await scheduler.start()
        try:

            async def published() -> bool:
                listed = await kube.list_objects(
                    hub, kube.PLACEMENT_DECISIONS, ns, label_selector=f"{LABEL_DECISION_KEY}=web"
                )
                return sum(len(s["decisions"]) for s in listed["items"]) == 130

            await eventually(published, timeout=60, what="130 decisions in the web slices")
        finally:
            await scheduler.stop()
        yield ns
        await kube.delete(hub, kube.NAMESPACES, ns)


def _run(*args: str, fleet: Fleet) -> str:
    result = cli(*args, "--kubeconfig", str(fleet.hub.kubeconfig_path))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(autouse=True)
def _kubectl_for_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUBECTL_ENV, str(find_binary("kubectl")))


async def test_the_table_shows_each_slice_with_its_keys_scheduler_and_count(
    fleet: Fleet, decisions: str
) -> None:
    table = await asyncio.to_thread(_run, "get", "placementdecisions", "-n", decisions, fleet=fleet)
    assert _no_age(table, 5) == [
        ["NAME", "PLACEMENT-KEY", "DECISION-INDEX", "SCHEDULER", "CLUSTERS", "AGE"],
        ["mirror-0", "ocm-placement", "0", _OTHER_SCHEDULER, "2", "<age>"],
        ["web-0", "web", "0", SCHEDULER_NAME, "100", "<age>"],
        ["web-1", "web", "1", SCHEDULER_NAME, "30", "<age>"],
    ]
    # the plugin, as kubectl runs it, prints the same table
    path = f"{scripts_dir()}{os.pathsep}{os.environ.get('PATH', '')}"
    plugin = await asyncio.to_thread(
        hub_kubectl,
        "inventory",
        "get",
        "placementdecisions",
        "-n",
        decisions,
        hub=fleet.hub,
        env={"PATH": path},
    )
    assert plugin.returncode == 0, plugin.stderr
    assert _no_age(plugin.stdout, 5) == _no_age(table, 5)


async def test_wide_lists_the_decision_key_and_the_clusters(fleet: Fleet, decisions: str) -> None:
    table = await asyncio.to_thread(
        _run, "get", "placementdecisions", "-n", decisions, "-o", "wide", fleet=fleet
    )
    rows = _no_age(table, 5)
    assert rows[0][6:] == ["DECISION-KEY", "CLUSTER-NAMES"]
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["mirror-0"][6:] == ["mirror", "eu-000,other/far-away"]
    assert by_name["web-0"][6:] == ["web", ",".join(f"eu-{i:03d}" for i in range(100))]
    assert by_name["web-1"][6:] == ["web", ",".join(f"eu-{i:03d}" for i in range(100, 130))]


async def test_one_slice_by_name_and_across_namespaces_by_selector(
    fleet: Fleet, decisions: str
) -> None:
    one = await asyncio.to_thread(
        _run, "get", "placementdecision", "web-1", "-n", decisions, fleet=fleet
    )
    assert [row[:5] for row in _cells(one)[1:]] == [["web-1", "web", "1", SCHEDULER_NAME, "30"]]
    every = await asyncio.to_thread(
        _run, "get", "placementdecisions", "-A", "-l", f"{LABEL_DECISION_KEY}=web", fleet=fleet
    )
    rows = _cells(every)
    assert rows[0][:2] == ["NAMESPACE", "NAME"]
    assert [row[:2] for row in rows[1:]] == [[decisions, "web-0"], [decisions, "web-1"]]


@pytest.mark.parametrize(
    "output",
    [
        "json",
        "yaml",
        "name",
        "jsonpath={.items[*].schedulerName}",
        "custom-columns=N:.metadata.name",
    ],
)
async def test_other_formats_are_kubectls_own(fleet: Fleet, decisions: str, output: str) -> None:
    ours = await asyncio.to_thread(
        _run, "get", "placementdecisions", "-n", decisions, "-o", output, fleet=fleet
    )
    theirs = await asyncio.to_thread(
        hub_kubectl, "get", "placementdecisions", "-n", decisions, "-o", output, hub=fleet.hub
    )
    assert theirs.returncode == 0, theirs.stderr
    assert ours == theirs.stdout


async def test_without_kubectl_json_holds_the_same_slices(
    fleet: Fleet, decisions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KUBECTL_ENV)
    monkeypatch.setenv("PATH", "/nonexistent-bin")  # no kubectl (this machine has /bin/kubectl)
    ours = json.loads(
        await asyncio.to_thread(
            _run, "get", "placementdecisions", "-n", decisions, "-o", "json", fleet=fleet
        )
    )
    # Both read the version discovery prefers for PlacementDecision: v1alpha2 on this hub.
    theirs = await asyncio.to_thread(
        hub_kubectl, "get", "placementdecisions.multicluster.x-k8s.io", "-n", decisions,
        "-o", "json", hub=fleet.hub,
    )  # fmt: skip
    assert theirs.returncode == 0, theirs.stderr
    expected: dict[str, Any] = json.loads(theirs.stdout)
    for item in expected["items"]:
        item["metadata"].pop("managedFields", None)
    assert ours == expected
    assert [i["metadata"]["name"] for i in ours["items"]] == ["mirror-0", "web-0", "web-1"]


async def test_a_missing_slice_and_an_empty_namespace(fleet: Fleet, decisions: str) -> None:
    hub = str(fleet.hub.kubeconfig_path)
    missing = await asyncio.to_thread(
        cli, "get", "placementdecisions", "nosuch", "-n", decisions, "--kubeconfig", hub
    )
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: ") and "nosuch" in missing.stderr
    assert "Traceback" not in missing.stderr
    async with await fleet.hub.client() as client:
        await kube.apply(
            client,
            kube.NAMESPACES,
            {"metadata": {"name": f"{decisions}-empty"}},
            field_manager="test",
        )
        try:
            empty = await asyncio.to_thread(
                cli, "get", "placementdecisions", "-n", f"{decisions}-empty", "--kubeconfig", hub
            )
        finally:
            await kube.delete(client, kube.NAMESPACES, f"{decisions}-empty")
    assert (empty.returncode, empty.stdout) == (0, "")
    assert empty.stderr == f"No resources found in {decisions}-empty namespace.\n"
