"""docs/upgrade.md, step by step, on a hub of its own with profiles in place.

The old release is the chart with the v1alpha1-only ClusterProfile and PlacementDecision
CRDs upstream's v0.1.x ships, installed by ``helm install`` (Helm creates ``crds/`` on the
first install only, under its field manager ``helm``). Two sharded cluster manager replicas,
run with the chart's own command line as its Deployment's pods would be, keep profiles for
four registrations. Then, as the document says:

1. ``crds apply`` refuses to take ``spec.versions`` from ``helm``, ``--force-conflicts``
   takes it: v1alpha2 is served, no profile is written (uids and resourceVersions equal);
2. ``helm upgrade`` to this chart: the CRDs are untouched (Helm never upgrades ``crds/``),
   no profile is written;
3. the Deployment's rolling update of the replicas (a new one up, an old one stopped,
   twice): no profile deleted, every one held by its rendezvous owner, its uid and its
   conditions' transition times kept;
4. ``crds migrate``: storage v1alpha2 alone, every profile rewritten (same uid and content,
   new resourceVersion); the replicas go on writing (a ClusterProperty reaches every profile);
5. rollback: an old v1alpha1-only CRD is refused while v1alpha2 is stored; after
   ``crds migrate --to v1alpha1`` and ``helm rollback`` it applies, and the profiles are all
   there, read through v1alpha1.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
    LABEL_CLUSTER_SET,
)
from cluster_inventory.controller.sharding import rendezvous_owner
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager import registration_secret
from cluster_inventory.testing import ControlPlane
from cluster_inventory_workshop.chart import CHART_DIR, NAMESPACE, helm, render_chart
from tests.support.hub.crd_versions import (
    DECISIONS_CRD,
    PROFILES_CRD,
    kubectl_apply,
    served,
    storage_of,
    v1alpha1_only,
)
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

RELEASE = "ci"
MANAGER = "cluster-inventory"
MEMBERS = [f"r{i}" for i in range(4)]
PROPERTY = "upgrade.test.cluster-inventory.dev"


def _old_chart(folder: Path) -> Path:
    """This chart with the CRDs of the old release: v1alpha1 only for the multicluster ones."""
    chart = folder / "old-chart"
    shutil.copytree(CHART_DIR, chart)
    for crd in v1alpha1_only():
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        (chart / "crds" / f"{group}_{plural}.yaml").write_text(yaml.safe_dump(crd, sort_keys=False))
    return chart


def _manager_args() -> list[str]:
    """The sharded manager's container arguments, as the chart renders them."""
    rendered = render_chart([CHART_DIR / "examples" / "sharded.yaml"], release=RELEASE)
    (deployment,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["cluster-inventory", "manager", "run"]
    return list(container["args"])


class Replicas:
    """Manager replicas as the Deployment's pods: the chart's command line, own POD_NAME."""

    def __init__(self, hub: ControlPlane) -> None:
        self.hub = hub
        self.args = _manager_args()
        self.running: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str) -> None:
        self.running[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cluster_inventory.cli",
                "manager",
                "run",
                *self.args,
                # Loopback, no ports, and the test's shorter periods; the last value wins.
                "--kubeconfig",
                str(self.hub.kubeconfig_path),
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
                "--probe-interval=1",
                "--shard-lease-duration=3",
                "--shard-renew-interval=1",
            ],
            env={**os.environ, "POD_NAME": name, "POD_NAMESPACE": NAMESPACE},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    async def stop(self, name: str) -> str:
        """SIGTERM, as the kubelet stops a pod; its stderr once it has exited."""
        proc = self.running.pop(name)
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
        assert proc.returncode == 0, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        return err

    async def stop_all(self) -> None:
        for name in list(self.running):
            await self.stop(name)

    def live(self) -> list[str]:
        return list(self.running)


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    kept = copy.deepcopy(obj)
    kept.pop("apiVersion", None)
    for key in ("resourceVersion", "managedFields"):
        kept["metadata"].pop(key, None)
    return kept


def _snapshot(profiles: Informer) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Per profile: (uid, resourceVersion, content), from the watch's cache."""
    return {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": (
            p["metadata"]["uid"],
            p["metadata"]["resourceVersion"],
            _content(p),
        )
        for p in profiles.items()
    }


def _transitions(profiles: Informer) -> dict[str, dict[str, tuple[str, str]]]:
    return {
        p["metadata"]["name"]: {
            c["type"]: (c["status"], c["lastTransitionTime"])
            for c in (p.get("status") or {}).get("conditions") or ()
        }
        for p in profiles.items()
    }


def _settled(profile: dict[str, Any]) -> bool:
    """The manager's whole status is there: version, both conditions True, providers."""
    status = profile.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or ()}
    return bool(
        status.get("accessProviders")
        and (status.get("version") or {}).get("kubernetes")
        and conditions.get("ControlPlaneHealthy") == conditions.get("Joined") == "True"
    )


def _held_by(profiles: Informer, live: list[str], prop: str | None = None) -> bool:
    """Every profile held by its rendezvous owner among ``live``, settled (with ``prop``)."""
    items = {p["metadata"]["name"]: p for p in profiles.items()}
    return len(items) == len(MEMBERS) and all(
        (items[m]["metadata"].get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER)
        == rendezvous_owner(m, live)
        and _settled(items[m])
        and (
            prop is None
            or any(p.get("name") == PROPERTY for p in items[m]["status"].get("properties") or ())
        )
        for m in MEMBERS
    )


async def _register_the_hub_four_times(hub: ControlPlane, client: kube.ApiClient) -> None:
    """Four registrations of the hub itself, each in its own inventory."""
    text = yaml.safe_dump(hub.kubeconfig())
    for name in MEMBERS:
        await kube.apply(
            client,
            kube.NAMESPACES,
            {"metadata": {"name": f"inv-{name}", "labels": {LABEL_CLUSTER_SET: f"set-{name}"}}},
            field_manager="test",
        )
        secret = registration_secret(name, NAMESPACE, text, [f"set-{name}"])
        await kube.apply(client, kube.SECRETS, secret, field_manager="test")


async def test_upgrade_and_rollback_lose_nothing(tmp_path: Path) -> None:
    async with ControlPlane("upgrade-hub") as hub, await hub.client() as client:
        kc = ("--kubeconfig", str(hub.kubeconfig_path))
        old = _old_chart(tmp_path)
        helm("install", RELEASE, str(old), "-n", NAMESPACE, "--create-namespace", *kc)
        assert served(await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)) == [
            "v1alpha1"
        ]
        await _register_the_hub_four_times(hub, client)
        profiles = Informer(
            client,
            kube.CLUSTER_PROFILES,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={MANAGER}",
            name="test profiles",
        )
        deleted: list[str] = []
        profiles.add_handler(
            lambda event, obj, _: (
                deleted.append(obj["metadata"]["name"]) if event == "DELETED" else None
            )
        )
        replicas = Replicas(hub)
        try:
            async with profiles:
                await profiles.wait_synced()
                for name in ("pod-a", "pod-b"):
                    replicas.start(name)
                await eventually(
                    lambda: _held_by(profiles, replicas.live()),
                    timeout=120,
                    what="the old release's profiles",
                )
                at_rest = _snapshot(profiles)
                transitions = _transitions(profiles)

                # 1. The CRDs first: Helm's fields are taken only when told to; no profile written.
                refused = await asyncio.to_thread(cli, "crds", "apply", *kc)
                assert refused.returncode == 1
                assert ".spec.versions (managed by helm)" in refused.stderr, refused.stderr
                applied = await asyncio.to_thread(cli, "crds", "apply", "--force-conflicts", *kc)
                assert applied.returncode == 0, applied.stderr
                assert "took over .spec.versions from helm" in applied.stdout
                for name in (PROFILES_CRD, DECISIONS_CRD):
                    crd = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, name)
                    assert served(crd) == ["v1alpha1", "v1alpha2"]
                assert _snapshot(profiles) == at_rest

                # 2. The chart: Helm leaves crds/ alone on an upgrade, and writes no profile.
                crd_before = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
                helm("upgrade", RELEASE, str(CHART_DIR), "-n", NAMESPACE, *kc)
                crd_after = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
                assert crd_after["spec"] == crd_before["spec"]
                assert _snapshot(profiles) == at_rest

                # 3. The manager: the Deployment rolls, one new pod up before an old one goes.
                for new, old_pod in (("pod-c", "pod-a"), ("pod-d", "pod-b")):
                    replicas.start(new)
                    await eventually(
                        lambda: _held_by(profiles, replicas.live()),
                        timeout=90,
                        what=f"{new} holding its share",
                    )
                    await replicas.stop(old_pod)
                    await eventually(
                        lambda: _held_by(profiles, replicas.live()),
                        timeout=90,
                        what=f"{old_pod}'s share taken over",
                    )
                assert deleted == []
                assert {k: v[0] for k, v in _snapshot(profiles).items()} == {
                    k: v[0] for k, v in at_rest.items()
                }
                assert _transitions(profiles) == transitions

                # 4. The storage move, the replicas running; they write on through v1alpha1.
                before_move = _snapshot(profiles)
                moved = await asyncio.to_thread(cli, "crds", "migrate", *kc)
                assert moved.returncode == 0, moved.stderr
                for name in (PROFILES_CRD, DECISIONS_CRD):
                    assert await storage_of(client, name) == ("v1alpha2", ["v1alpha2"])
                await eventually(
                    lambda: all(before_move[k][1] != v[1] for k, v in _snapshot(profiles).items()),
                    what="every profile rewritten",
                )
                for key, (uid, _, content) in _snapshot(profiles).items():
                    assert (uid, content) == (before_move[key][0], before_move[key][2])
                await kube.apply(
                    client,
                    kube.CLUSTER_PROPERTIES,
                    {"metadata": {"name": PROPERTY}, "spec": {"value": "after-the-move"}},
                    field_manager="test",
                )
                await eventually(
                    lambda: _held_by(profiles, replicas.live(), prop=PROPERTY),
                    timeout=60,
                    what="a change on the member in every profile after the move",
                )

                # 5. Rollback: the old CRD cannot drop a version still stored.
                old_crds = v1alpha1_only((PROFILES_CRD,))
                old_crd = [c for c in old_crds if c["metadata"]["name"] == PROFILES_CRD]
                too_early = kubectl_apply(hub, old_crd, tmp_path, check=False)
                assert too_early.returncode != 0
                assert "status.storedVersions" in too_early.stderr, too_early.stderr
                back = await asyncio.to_thread(cli, "crds", "migrate", "--to", "v1alpha1", *kc)
                assert back.returncode == 0, back.stderr
                helm("rollback", RELEASE, "1", "-n", NAMESPACE, *kc)
                kubectl_apply(hub, old_crd, tmp_path)
                await replicas.stop_all()
                assert await storage_of(client, PROFILES_CRD) == ("v1alpha1", ["v1alpha1"])
                kept = {k: v[0] for k, v in _snapshot(profiles).items()}
                assert kept == {k: v[0] for k, v in at_rest.items()}
                assert deleted == []
                listed = await asyncio.to_thread(cli, "get", "-A", *kc)
                assert listed.returncode == 0, listed.stderr
                assert sorted(line.split()[1] for line in listed.stdout.splitlines()[1:]) == MEMBERS
        finally:
            for proc in replicas.running.values():
                proc.kill()
                await asyncio.to_thread(proc.communicate, timeout=60)
