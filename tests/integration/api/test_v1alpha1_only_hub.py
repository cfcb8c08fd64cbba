"""A hub whose ClusterProfile CRD serves only v1alpha1 (OCM's, an older release) still works:
the manager, a consumer's credentials, the runtime and the CLI.

A control plane of its own: the session hub's CRD serves both versions for every other test.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import credentials, kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig, registration_secret
from cluster_inventory.testing import ControlPlane
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.crd_versions import runtime_syncs, v1alpha1_only
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


async def test_readers_fall_back_to_v1alpha1_and_conformance_says_why() -> None:
    async with ControlPlane("ocm-like-hub") as hub, await hub.client() as client:
        await kube.ensure_crds(client, v1alpha1_only())
        assert await kube.cluster_profiles_resource(client) == kube.CLUSTER_PROFILES
        await kube.apply(client, kube.NAMESPACES, {"metadata": {"name": "inv"}}, field_manager="t")
        body = {
            "metadata": {
                "name": "east",
                "namespace": "inv",
                "labels": {"x-k8s.io/cluster-manager": "ocm"},
            },
            "spec": {"clusterManager": {"name": "ocm"}},
        }
        await kube.apply(client, kube.CLUSTER_PROFILES, body, field_manager="t")
        status = {
            **body,
            "status": {
                "credentialProviders": [
                    {"name": "legacy", "cluster": {"server": "https://east.example.com"}}
                ]
            },
        }
        await kube.apply(
            client, kube.CLUSTER_PROFILES, status, field_manager="t", subresource="status"
        )

        # The runtime lists and watches through v1alpha1.
        await runtime_syncs(client, "inv")

        kubeconfig = str(hub.kubeconfig_path)
        got = await asyncio.to_thread(cli, "get", "-n", "inv", "--kubeconfig", kubeconfig)
        assert got.returncode == 0, got.stderr
        assert got.stdout.splitlines()[1].split()[:2] == ["east", "ocm"]
        as_json = await asyncio.to_thread(
            cli,
            "get",
            "east",
            "-n",
            "inv",
            "-o",
            "json",
            "--kubeconfig",
            kubeconfig,
            env={"CLUSTER_INVENTORY_KUBECTL": "", "PATH": "/nonexistent-bin"},
        )
        assert json.loads(as_json.stdout)["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"

        checked = await asyncio.to_thread(
            cli, "conformance", "-n", "inv", "-o", "json", "--kubeconfig", kubeconfig
        )
        assert checked.returncode == 3, checked.stderr
        required = json.loads(checked.stdout)["Groups"]["Required"]
        assert [t["Conformant"] for t in required] == [False, True, True, True]
        assert "not served" in required[0]["Message"]


async def test_the_manager_and_a_consumer_work_on_a_v1alpha1_only_hub(tmp_path: Path) -> None:
    async with ControlPlane("ocm-like-hub-2") as hub, await hub.client() as client:
        await kube.ensure_crds(client, v1alpha1_only())
        for ns, labels in (("system", {}), ("inv", {LABEL_CLUSTER_SET: "prod"})):
            await kube.apply(
                client,
                kube.NAMESPACES,
                {"metadata": {"name": ns, "labels": labels}},
                field_manager="t",
            )
        # The hub registers itself as its only member.
        text = yaml.safe_dump(hub.kubeconfig())
        await kube.apply(
            client,
            kube.SECRETS,
            registration_secret("self", "system", text, ["prod"]),
            field_manager="t",
        )
        config = ManagerConfig(
            name="m", namespace="system", member_namespace="system", probe_interval=0.5
        )
        manager = ClusterManagerRunnable(
            client, config, registry=CollectorRegistry(), identity="test"
        )
        task = asyncio.get_running_loop().create_task(manager.run())
        try:

            async def ready() -> dict[str, Any] | None:
                profile = await kube.get(client, kube.CLUSTER_PROFILES, "self", namespace="inv")
                conds = {
                    c["type"]: c["status"]
                    for c in (profile.get("status") or {}).get("conditions") or ()
                }
                token = await kube.get(client, kube.SECRETS, "self", namespace="inv")
                return profile if conds.get("Joined") == "True" and token else None

            profile = await eventually(ready, timeout=60, what="the manager's profile and token")
            providers = provider_file(
                tmp_path / "providers.json",
                str(PLUGIN),
                ["--namespace", "inv"],
                {"KUBECONFIG": str(hub.kubeconfig_path)},
            )
            async with await credentials.connect(profile, providers) as member:
                version = await kube.request(member, "GET", "/version")
            assert version["gitVersion"].startswith("v1.")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
