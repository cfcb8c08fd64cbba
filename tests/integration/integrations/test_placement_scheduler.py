"""The placement scheduler on a real hub: slices, health changes, no-op runs, deletion."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_DECISION_REVISION,
    LABEL_PLACEMENT_KEY,
)
from cluster_inventory.integrations.placement import (
    PLACEMENTS,
    SCHEDULER_NAME,
    PlacementScheduler,
    read_decisions,
)
from cluster_inventory.testing import Fleet
from tests.support.hub.placements import bounded, placement, profile, set_status, slices
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


@pytest.fixture
async def hub_client(fleet: Fleet) -> AsyncIterator[kube.ApiClient]:
    async with await fleet.hub.client() as client:
        yield client


@pytest.fixture
async def scheduler(
    hub_client: kube.ApiClient, test_namespace: str
) -> AsyncIterator[Callable[[], PlacementScheduler]]:
    made: list[PlacementScheduler] = []

    def make() -> PlacementScheduler:
        s = PlacementScheduler(
            hub_client, namespaces=[test_namespace], registry=CollectorRegistry()
        )
        made.append(s)
        return s

    try:
        yield make
    finally:
        for s in made:
            await s.stop()


async def test_250_matching_profiles_make_3_slices_and_an_unchanged_rerun_writes_nothing(
    hub_client: kube.ApiClient,
    test_namespace: str,
    scheduler: Callable[[], PlacementScheduler],
) -> None:
    ns = test_namespace
    calls = [
        profile(
            hub_client,
            ns,
            f"eu-{i:03d}",
            labels={"env": "prod"},
            properties={"region": "eu-west-1"},
        )
        for i in range(250)
    ]
    calls += [
        profile(
            hub_client, ns, "us-000", labels={"env": "prod"}, properties={"region": "us-east-1"}
        ),
        profile(
            hub_client, ns, "dev-000", labels={"env": "dev"}, properties={"region": "eu-west-1"}
        ),
        profile(
            hub_client,
            ns,
            "sick-000",
            labels={"env": "prod"},
            properties={"region": "eu-west-1"},
            ok=False,
        ),
    ]
    await bounded(calls)
    await placement(
        hub_client,
        ns,
        "web",
        clusterSelector={"matchLabels": {"env": "prod"}},
        propertySelector={
            "matchExpressions": [
                {"key": "region", "operator": "In", "values": ["eu-west-1", "eu-central-1"]}
            ]
        },
    )
    first = scheduler()
    await first.start()

    async def published() -> list[dict[str, Any]] | None:
        found = await slices(hub_client, ns)
        total = sum(len(s["decisions"]) for s in found)
        return found if len(found) == 3 and total == 250 else None

    found = await eventually(published, timeout=60, what="3 slices with 250 decisions")
    assert [s["metadata"]["name"] for s in found] == ["web-0", "web-1", "web-2"]
    assert [len(s["decisions"]) for s in found] == [100, 100, 50]
    revision = found[0]["metadata"]["labels"][LABEL_DECISION_REVISION]
    for index, s in enumerate(found):
        labels = s["metadata"]["labels"]
        assert labels[LABEL_DECISION_KEY] == "web"
        assert labels[LABEL_DECISION_INDEX] == str(index)
        assert labels[LABEL_PLACEMENT_KEY] == "web"
        assert labels[LABEL_DECISION_REVISION] == revision
        assert s["schedulerName"] == SCHEDULER_NAME
    chosen = [d["clusterProfileRef"]["name"] for s in found for d in s["decisions"]]
    assert chosen == [f"eu-{i:03d}" for i in range(250)]

    async def status() -> dict[str, Any] | None:
        p = await kube.get(hub_client, PLACEMENTS, "web", ns)
        st = p.get("status") or {}
        return p if st.get("numberOfSelectedClusters") == 250 and st.get("excluded") else None

    placed = await eventually(status, what="placement status")
    excluded = {e["reason"]: e for e in placed["status"]["excluded"]}
    assert excluded["LabelsDoNotMatch"]["clusters"] == ["dev-000"]
    assert excluded["PropertiesDoNotMatch"]["clusters"] == ["us-000"]
    assert excluded["NotHealthy"]["clusters"] == ["sick-000"]
    conditions = {c["type"]: c for c in placed["status"]["conditions"]}
    assert conditions["Scheduled"]["status"] == "True"
    assert conditions["Satisfied"]["status"] == "True"

    # the consumer reads the three slices as one set
    decision = await read_decisions(hub_client, ns, "web")
    assert decision.complete and len(decision.clusters) == 250
    assert decision.clusters[0] == f"{ns}/eu-000"

    # a fresh scheduler over the same world writes nothing, and a status heartbeat on a
    # profile (a new version) queues nothing that writes either
    versions = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in found}
    placement_rv = placed["metadata"]["resourceVersion"]
    await first.stop()
    second = scheduler()
    await second.start()
    await eventually(lambda: second.reconciles >= 1, what="the second scheduler's reconcile")
    await set_status(
        hub_client, ns, "eu-007", properties={"region": "eu-west-1"}, version="v1.36.4"
    )
    await set_status(hub_client, ns, "sick-000", ok=False, properties={"region": "eu-west-1"})
    # an event that does queue the placement: a profile that does not match changes labels
    await profile(
        hub_client,
        ns,
        "dev-000",
        labels={"env": "dev", "x": "y"},
        properties={"region": "eu-west-1"},
    )
    await eventually(lambda: second.reconciles >= 2, what="a reconcile after the profile change")
    assert second.writes == 0
    after = await slices(hub_client, ns)
    assert {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in after} == versions
    assert (await kube.get(hub_client, PLACEMENTS, "web", ns))["metadata"][
        "resourceVersion"
    ] == placement_rv


async def test_a_cluster_that_turns_unhealthy_is_replaced_and_deleting_the_placement_removes_its_slices(
    hub_client: kube.ApiClient,
    test_namespace: str,
    scheduler: Callable[[], PlacementScheduler],
) -> None:
    ns = test_namespace
    regions = {"a": "eu-west-1", "b": "eu-central-1", "c": "eu-central-1", "d": "us-east-1"}
    await bounded(
        [profile(hub_client, ns, n, properties={"region": r}) for n, r in regions.items()]
    )
    # another scheduler's decision with the same decision-key is never touched
    foreign = {
        "metadata": {"name": "ocm-web", "namespace": ns, "labels": {LABEL_DECISION_KEY: "web"}},
        "schedulerName": "ocm",
        "decisions": [{"clusterProfileRef": {"name": "d"}}],
    }
    await kube.apply(hub_client, kube.PLACEMENT_DECISIONS, foreign, field_manager="ocm")
    await placement(
        hub_client,
        ns,
        "web",
        numberOfClusters=2,
        spreadByProperty="region",
        propertySelector={
            "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us-east-1"]}]
        },
    )
    sched = scheduler()
    await sched.start()

    async def chosen() -> list[str]:
        found = await kube.get(hub_client, kube.PLACEMENT_DECISIONS, "web-0", ns)
        return [d["clusterProfileRef"]["name"] for d in found["decisions"]]

    await eventually(lambda: _equals(chosen(), ["a", "b"]), what="a and b chosen (spread)")
    await set_status(hub_client, ns, "b", ok=False, properties={"region": "eu-central-1"})
    await eventually(lambda: _equals(chosen(), ["a", "c"]), what="c replaces the unhealthy b")
    p = await kube.get(hub_client, PLACEMENTS, "web", ns)
    excluded = {e["reason"]: e["clusters"] for e in p["status"]["excluded"]}
    assert excluded["NotHealthy"] == ["b"]
    await kube.delete(hub_client, kube.CLUSTER_PROFILES, "c", ns)
    await eventually(lambda: _equals(chosen(), ["a"]), what="a deleted profile leaves")

    await kube.delete(hub_client, PLACEMENTS, "web", ns)

    async def only_foreign() -> bool:
        return [s["metadata"]["name"] for s in await slices(hub_client, ns)] == ["ocm-web"]

    await eventually(only_foreign, what="the placement's slices deleted")
    left = await kube.get(hub_client, kube.PLACEMENT_DECISIONS, "ocm-web", ns)
    assert left["decisions"] == foreign["decisions"] and left["schedulerName"] == "ocm"


async def test_a_name_taken_by_another_scheduler_is_reported_not_overwritten(
    hub_client: kube.ApiClient,
    test_namespace: str,
    scheduler: Callable[[], PlacementScheduler],
) -> None:
    ns = test_namespace
    await profile(hub_client, ns, "a")
    taken = {
        "metadata": {"name": "web-0", "namespace": ns},
        "schedulerName": "someone-else",
        "decisions": [],
    }
    stored = await kube.apply(hub_client, kube.PLACEMENT_DECISIONS, taken, field_manager="other")
    await placement(hub_client, ns, "web")
    sched = scheduler()
    await sched.start()

    async def conflict() -> dict[str, Any] | None:
        p = await kube.get(hub_client, PLACEMENTS, "web", ns)
        conditions = {c["type"]: c for c in (p.get("status") or {}).get("conditions") or ()}
        scheduled = conditions.get("Scheduled") or {}
        return scheduled if scheduled.get("reason") == "DecisionConflict" else None

    scheduled = await eventually(conflict, what="DecisionConflict on the placement")
    assert scheduled["status"] == "False" and "web-0" in scheduled["message"]
    again = await kube.get(hub_client, kube.PLACEMENT_DECISIONS, "web-0", ns)
    assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


async def _equals(value: Any, expected: Any) -> bool:
    return (await value) == expected


async def test_placement_commands_and_the_scheduler_process(
    hub_client: kube.ApiClient, test_namespace: str, fleet: Fleet
) -> None:
    ns = test_namespace
    hub_kubeconfig = str(fleet.hub.kubeconfig_path)
    regions = {"a": "eu-west-1", "b": "eu-central-1", "c": "us-east-1"}
    await bounded(
        [
            profile(hub_client, ns, n, labels={"team": "a"}, properties={"region": r})
            for n, r in regions.items()
        ]
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "placement",
        "run",
        "-n",
        ns,
        "--kubeconfig",
        hub_kubeconfig,
        "--no-leader-elect",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        bad = await asyncio.to_thread(
            cli,
            "placement",
            "create",
            "eu",
            "-n",
            ns,
            "--kubeconfig",
            hub_kubeconfig,
            "--where",
            "region in (eu-west-1",
        )
        assert bad.returncode == 1 and bad.stderr.startswith("error: --where: "), bad.stderr
        created = await asyncio.to_thread(
            cli,
            "placement",
            "create",
            "eu",
            "-n",
            ns,
            "--kubeconfig",
            hub_kubeconfig,
            "-l",
            "team=a",
            "--where",
            "region in (eu-west-1, eu-central-1)",
            "--clusters",
            "5",
        )
        assert created.returncode == 0, created.stderr

        async def scheduled() -> bool:
            p = await kube.get(hub_client, PLACEMENTS, "eu", ns)
            return "eu-0" in ((p.get("status") or {}).get("decisions") or ())

        await eventually(scheduled, timeout=30, what="the scheduler process's decisions")
        listed = await asyncio.to_thread(
            cli, "placement", "get", "-n", ns, "--kubeconfig", hub_kubeconfig, "-o", "wide"
        )
        table = listed.stdout
        header, row = table.splitlines()
        assert header.split()[:6] == [
            "NAME",
            "REQUESTED",
            "SELECTED",
            "SATISFIED",
            "DECISIONS",
            "AGE",
        ]
        assert row.split()[:5] == ["eu", "5", "2", "False", "eu-0"]
        assert "2 cluster(s) chosen (5 requested); left out: 1 PropertiesDoNotMatch" in row

        shown = await asyncio.to_thread(
            cli, "placement", "decisions", "eu", "-n", ns, "--kubeconfig", hub_kubeconfig
        )
        assert shown.returncode == 0, shown.stderr
        assert [line.split()[0] for line in shown.stdout.splitlines()] == [
            "CLUSTER",
            f"{ns}/a",
            f"{ns}/b",
        ]
        assert "2 cluster(s) in 1 slice(s)" in shown.stderr and "complete" in shown.stderr
        as_json = await asyncio.to_thread(
            cli,
            "placement",
            "decisions",
            "eu",
            "-n",
            ns,
            "--kubeconfig",
            hub_kubeconfig,
            "-o",
            "json",
        )
        assert json.loads(as_json.stdout)["clusters"] == [f"{ns}/a", f"{ns}/b"]

        deleted = await asyncio.to_thread(
            cli, "placement", "delete", "eu", "-n", ns, "--kubeconfig", hub_kubeconfig
        )
        assert deleted.returncode == 0, deleted.stderr

        async def gone() -> bool:
            return not await slices(hub_client, ns)

        await eventually(gone, what="the slices deleted by the scheduler process")
        missing = await asyncio.to_thread(
            cli, "placement", "decisions", "eu", "-n", ns, "--kubeconfig", hub_kubeconfig
        )
        assert (
            missing.returncode == 1
            and "no PlacementDecision with decision-key eu" in missing.stderr
        )
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
