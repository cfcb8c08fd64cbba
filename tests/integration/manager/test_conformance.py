"""`cluster-inventory conformance` on real profiles: the manager's pass, a broken one fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from cluster_inventory import kube
from tests.support.hub.manager import Harness
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


async def _all_reported(h: Harness, ns: str, names: set[str]) -> bool:
    for name in names:
        profile = await h.profile(ns, name)
        status = profile.get("status") or {}
        types = {c["type"] for c in status.get("conditions") or ()}
        if not ({"ControlPlaneHealthy", "Joined"} <= types and status.get("version")):
            return False
    return True


async def _names_are(h: Harness, ns: str, names: set[str]) -> bool:
    return await h.profile_names(ns) == names


async def _duplicate_events(h: Harness) -> list[dict]:
    listed = await kube.list_objects(
        h.hub_client,
        kube.EVENTS,
        h.namespace,
        field_selector="regarding.kind=Secret,regarding.name=alpha-again",
    )
    return [e for e in listed["items"] if e.get("reason") == "DuplicateMember"]


async def test_the_managers_inventory_is_conformant_and_a_broken_profile_is_not(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await h.register("beta", h.member(1), ["prod"])
    # A second registration of the first member: one member, so one profile in the inventory
    # (member ids stay unique per namespace), and the conflict is reported on its Secret.
    await h.register("alpha-again", h.member(0), ["prod"])
    await eventually(lambda: _all_reported(h, ns, {"alpha", "beta"}), what="full status")
    await eventually(
        lambda: _names_are(h, ns, {"alpha", "beta"}), what="one profile for the member"
    )
    events = await eventually(lambda: _duplicate_events(h), what="the DuplicateMember Event")
    assert "registration alpha-again reaches member" in events[0]["note"]
    hub = str(h.hub.kubeconfig_path)
    manager = h.manager.config.name
    args = ("conformance", "-n", ns, "--cluster-manager", manager, "--kubeconfig", hub)

    good = await asyncio.to_thread(cli, *args, "--report-dir", str(tmp_path / "good"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "CONFORMANT: 12/12 tests conformant" in good.stdout, good.stdout
    doc = yaml.safe_load((tmp_path / "good" / "report.yaml").read_text())
    assert doc["Passed"] == doc["Total"] == 12
    assert all(t["Conformant"] for g in doc["Groups"].values() for t in g)
    page = (tmp_path / "good" / "report.html").read_text()
    assert "Conformant: 12 of 12" in page

    # A hand-made profile whose manager label disagrees with its spec breaks a Required rule.
    await kube.apply(
        h.hub_client,
        kube.CLUSTER_PROFILES,
        {
            "metadata": {
                "name": "forged",
                "namespace": ns,
                "labels": {"x-k8s.io/cluster-manager": "someone-else"},
            },
            "spec": {"clusterManager": {"name": manager}},
        },
        field_manager="test",
    )
    bad = await asyncio.to_thread(cli, *args, "-o", "json")
    assert bad.returncode == 3, bad.stdout + bad.stderr
    failed = [t for t in yaml.safe_load(bad.stdout)["Groups"]["Required"] if not t["Conformant"]]
    assert [t["Desc"] for t in failed] == [
        "label x-k8s.io/cluster-manager equals spec.clusterManager.name"
    ]
    assert f"{ns}/forged" in failed[0]["Message"]


async def test_a_namespace_that_does_not_exist_is_an_error_not_a_report(
    harness: Harness,
) -> None:
    missing = f"{harness.namespace}-nope"
    result = await asyncio.to_thread(
        cli, "conformance", "-n", missing, "--kubeconfig", str(harness.hub.kubeconfig_path)
    )
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: namespace {missing}: cannot be read: it does not exist on the hub"
    ]


async def test_an_empty_namespace_fails_the_required_checks(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("empty", None)
    result = await asyncio.to_thread(
        cli, "conformance", "-n", ns, "--kubeconfig", str(h.hub.kubeconfig_path)
    )
    assert result.returncode == 3
    assert "FAIL  the inventory namespace has at least one ClusterProfile" in result.stdout
    assert "NOT CONFORMANT" in result.stdout


async def test_the_manager_never_erases_another_writers_credential_providers(
    harness: Harness, test_namespace: str
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _all_reported(h, ns, {"alpha"}), what="full status")
    legacy = [{"name": "legacy", "cluster": {"server": "https://legacy.example.com"}}]
    await kube.apply(
        h.hub_client,
        kube.CLUSTER_PROFILES,
        {"metadata": {"name": "alpha", "namespace": ns}, "status": {"credentialProviders": legacy}},
        field_manager="another-producer",
        subresource="status",
    )
    # A property change on the member makes the manager write the status again.
    prop = f"conformance.{test_namespace}.example.com"
    async with await h.member(0).client() as member:
        await kube.apply(
            member,
            kube.CLUSTER_PROPERTIES,
            {"metadata": {"name": prop}, "spec": {"value": "v2"}},
            field_manager="test",
        )
    try:

        async def rewritten() -> dict | None:
            status = (await h.profile(ns, "alpha")).get("status") or {}
            names = {p["name"]: p["value"] for p in status.get("properties") or ()}
            return status if names.get(prop) == "v2" else None

        status = await eventually(rewritten, what="the manager's status write")
        assert status["credentialProviders"] == legacy
        assert status["accessProviders"][0]["name"] == "secretreader"
    finally:
        async with await h.member(0).client() as member:
            await kube.delete(member, kube.CLUSTER_PROPERTIES, prop)
