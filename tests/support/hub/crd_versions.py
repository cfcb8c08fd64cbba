"""CRDs as other tools leave them on a hub, for the CRD upgrade and storage tests.

A hub whose ClusterProfile CRD serves v1alpha1 only is what upstream's v0.1.x release and
OCM's operator install; ``kubectl apply -f`` (client-side, field manager
``kubectl-client-side-apply``) is how upstream's README installs it.
"""

from __future__ import annotations

import asyncio
import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import api, kube
from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.runtime import FleetManager
from cluster_inventory.testing import ControlPlane
from tests.support.processes.binaries import kubectl

PROFILES_CRD = "clusterprofiles.multicluster.x-k8s.io"
DECISIONS_CRD = "placementdecisions.multicluster.x-k8s.io"


def v1alpha1_only(names: tuple[str, ...] = (PROFILES_CRD, DECISIONS_CRD)) -> list[dict[str, Any]]:
    """Our CRDs, with the ``multicluster.x-k8s.io`` ones in ``names`` serving v1alpha1 only."""
    crds = copy.deepcopy(api.load_crds())
    for crd in crds:
        if crd["metadata"]["name"] in names:
            crd["spec"]["versions"] = [
                v for v in crd["spec"]["versions"] if v["name"] == api.V1ALPHA1
            ]
    return crds


def kubectl_apply(
    hub: ControlPlane, docs: list[dict[str, Any]], folder: Path, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl apply -f`` (client-side) of ``docs`` on ``hub``; asserts success if ``check``."""
    manifest = folder / "crds.yaml"
    manifest.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    done = kubectl("--kubeconfig", str(hub.kubeconfig_path), "apply", "-f", str(manifest))
    assert done.returncode == 0 or not check, done.stderr
    return done


async def storage_of(client: kube.ApiClient, name: str) -> tuple[str | None, list[str]]:
    """(the version marked storage, ``status.storedVersions``) of the CRD ``name``."""
    crd = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, name)
    storage = next((v["name"] for v in crd["spec"]["versions"] if v["storage"]), None)
    return storage, list(crd["status"]["storedVersions"])


def served(crd: dict[str, Any]) -> list[str]:
    """The names of the versions a CRD serves."""
    return [v["name"] for v in crd["spec"]["versions"] if v.get("served")]


async def runtime_syncs(client: kube.ApiClient, namespace: str) -> None:
    """The runtime's FleetManager lists and watches the profiles of ``namespace`` (60 s)."""
    fleet = FleetManager(
        client, ProviderConfig(providers=()), namespaces=[namespace], registry=CollectorRegistry()
    )
    await fleet.start()
    try:
        await asyncio.wait_for(fleet.wait_synced(), 60)
    finally:
        await fleet.stop()
