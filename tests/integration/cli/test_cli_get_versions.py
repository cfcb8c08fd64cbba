"""Each resource is read through the version it serves, not the one its group lists.

Re-applying OCM's or upstream's v1alpha1 ClusterProfile CRD on a hub that has ours leaves
ClusterProfile serving v1alpha1 only beside PlacementDecision serving v1alpha2: the group
``multicluster.x-k8s.io`` lists v1alpha2, and a ClusterProfile read through it is a 404.
``get``, ``describe``, ``kubeconfig`` and the runtime's provider must read ClusterProfiles
through v1alpha1 and PlacementDecisions through v1alpha2 there. A hub of its own: its CRDs
are not the session hub's.
"""

from __future__ import annotations

import asyncio
import json

import yaml

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane
from tests.support.hub.crd_versions import PROFILES_CRD, runtime_syncs, v1alpha1_only
from tests.support.processes.cli import cli

#: No kubectl: ``-o json`` is printed by the CLI itself, from what it read.
NO_KUBECTL = {"CLUSTER_INVENTORY_KUBECTL": "", "PATH": "/nonexistent-bin"}


async def test_profiles_and_decisions_are_read_through_the_version_each_serves() -> None:
    async with ControlPlane("mixed-versions") as hub, await hub.client() as client:
        await kube.ensure_crds(client, v1alpha1_only((PROFILES_CRD,)))
        await kube.apply(client, kube.NAMESPACES, {"metadata": {"name": "inv"}}, field_manager="t")
        body = {
            "metadata": {"name": "east", "namespace": "inv"},
            "spec": {"clusterManager": {"name": "ocm"}},
        }
        await kube.apply(client, kube.CLUSTER_PROFILES, body, field_manager="t")
        provider = {"name": "secretreader", "cluster": {"server": "https://east.example.com"}}
        await kube.apply(
            client,
            kube.CLUSTER_PROFILES,
            {**body, "status": {"accessProviders": [provider]}},
            field_manager="t",
            subresource="status",
        )
        decision = {
            "metadata": {"name": "web-0", "namespace": "inv"},
            "decisions": [{"clusterProfileRef": {"name": "east", "namespace": "inv"}}],
        }
        await kube.apply(client, kube.PLACEMENT_DECISIONS, decision, field_manager="t")
        kubeconfig = ("--kubeconfig", str(hub.kubeconfig_path))

        def run(*args: str) -> str:
            done = cli(*args, *kubeconfig, env=NO_KUBECTL)
            assert done.returncode == 0, done.stderr
            return done.stdout

        table = await asyncio.to_thread(run, "get", "-n", "inv")
        assert table.splitlines()[1].split()[:2] == ["east", "ocm"]
        profile = json.loads(await asyncio.to_thread(run, "get", "east", "-n", "inv", "-o", "json"))
        assert profile["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
        decisions = json.loads(
            await asyncio.to_thread(run, "get", "placementdecisions", "-n", "inv", "-o", "json")
        )
        assert [d["apiVersion"] for d in decisions["items"]] == ["multicluster.x-k8s.io/v1alpha2"]
        described = await asyncio.to_thread(run, "describe", "east", "-n", "inv")
        assert "API Version:      multicluster.x-k8s.io/v1alpha1" in described
        made = yaml.safe_load(await asyncio.to_thread(run, "kubeconfig", "east", "-n", "inv"))
        assert made["clusters"][0]["cluster"]["server"] == "https://east.example.com"

        # The full client's resolver, which the runtime's provider and the dashboard use.
        assert await kube.cluster_profiles_resource(client) == kube.CLUSTER_PROFILES
        assert (await kube.placement_decisions_resource(client)).version == "v1alpha2"
        await runtime_syncs(client, "inv")
