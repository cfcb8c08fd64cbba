"""Kueue's own manager (``sigs.k8s.io/kueue/cmd/kueue``) run off-cluster against a control plane.

Kueue is built to run in a Pod; run as a process on loopback it needs, besides
``--kubeconfig`` (controller-runtime's flag) and a ``Configuration`` file:

- all of Kueue's CRDs on the cluster it runs against (it starts a controller per kind);
- its namespace (``Configuration.namespace``; on the hub it is where it reads profiles);
- a webhook serving certificate in ``webhook.certDir`` (controller-runtime's webhook server
  will not start without one). Kueue's webhook *configurations* are not installed: the
  apiserver never calls Kueue, so a Job must carry what Kueue's Job webhook would set
  (``spec.suspend: true``, ``spec.managedBy: kueue.x-k8s.io/multikueue``);
- a metrics certificate at the fixed path ``/etc/kueue/metrics/certs`` (Kueue v0.19.2 reads
  it there when its internal certificate management is off; no flag moves it);
- the visibility server off (feature gate ``VisibilityOnDemand``: it wants in-cluster
  delegated authentication) and leader election off (one replica).

``docs/integrations.md`` lists the same needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from cluster_inventory import kube
from cluster_inventory.testing import CertificateAuthority, ControlPlane, ManagedProcess, free_port
from cluster_inventory_workshop.consumers import find_consumer
from cluster_inventory_workshop.upstream_crds import kueue_manager_crds
from tests.support.waiting import eventually

#: Where Kueue v0.19.2 reads its metrics certificate (``cmd/kueue/main.go``), fixed.
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"

WORKLOADS = kube.Resource(
    group="kueue.x-k8s.io", version="v1beta2", plural="workloads", kind="Workload", namespaced=True
)
LOCAL_QUEUES = kube.Resource(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="localqueues",
    kind="LocalQueue",
    namespaced=True,
)
CLUSTER_QUEUES = kube.Resource(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="clusterqueues",
    kind="ClusterQueue",
    namespaced=False,
)
RESOURCE_FLAVORS = kube.Resource(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="resourceflavors",
    kind="ResourceFlavor",
    namespaced=False,
)
ADMISSION_CHECKS = kube.Resource(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="admissionchecks",
    kind="AdmissionCheck",
    namespaced=False,
)
JOBS = kube.Resource(group="batch", version="v1", plural="jobs", kind="Job", namespaced=True)


def _metrics_certificate() -> None:
    if (METRICS_CERT_DIR / "tls.crt").is_file() and (METRICS_CERT_DIR / "tls.key").is_file():
        return
    try:
        METRICS_CERT_DIR.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed into place: another pytest worker's Kueue may be reading.
        suffix = f".{os.getpid()}.tmp"
        cert, key = METRICS_CERT_DIR / f"tls.crt{suffix}", METRICS_CERT_DIR / f"tls.key{suffix}"
        CertificateAuthority("kueue-metrics").serving_pair().write(cert, key)
        os.replace(key, METRICS_CERT_DIR / "tls.key")
        os.replace(cert, METRICS_CERT_DIR / "tls.crt")
    except PermissionError as exc:
        raise AssertionError(
            f"Kueue v0.19.2 reads its metrics certificate only from {METRICS_CERT_DIR} when run "
            "without its internal certificate management; this user cannot write there "
            f"({exc}). Run the test as root, or create that directory writable by this user."
        ) from exc


async def install_kueue_crds(cluster: ControlPlane) -> None:
    """Install every CRD of the pinned Kueue module on ``cluster`` (idempotent)."""
    crds = await asyncio.to_thread(kueue_manager_crds)
    async with await cluster.client() as client:
        await kube.ensure_crds(client, crds, timeout=60)


def _prepare(workdir: Path, config: Mapping[str, Any]) -> Path:
    """Write the certificates Kueue reads and its configuration; return the file."""
    _metrics_certificate()
    certs = Path(config["webhook"]["certDir"])
    certs.mkdir(parents=True, exist_ok=True)
    CertificateAuthority("kueue-webhook").serving_pair().write(certs / "tls.crt", certs / "tls.key")
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(dict(config)))
    return path


async def release_kueue_objects(cluster: ControlPlane) -> None:
    """Drop the finalizers Kueue (stopped now) put on its objects, so deletes complete."""
    crds = await asyncio.to_thread(kueue_manager_crds)
    async with await cluster.client() as client:
        for crd in crds:
            spec = crd["spec"]
            resource = kube.Resource(
                group=spec["group"],
                version=next(v["name"] for v in spec["versions"] if v.get("storage")),
                plural=spec["names"]["plural"],
                kind=spec["names"]["kind"],
                namespaced=spec["scope"] == "Namespaced",
            )
            try:
                listed = await kube.list_objects(client, resource)
            except kube.NotFoundError:
                continue
            for item in listed["items"]:
                meta = item["metadata"]
                if meta.get("finalizers"):
                    await kube.request(
                        client,
                        "PATCH",
                        resource.path(meta.get("namespace"), meta["name"]),
                        body={"metadata": {"finalizers": None}},
                        content_type="application/merge-patch+json",
                    )


async def remove_kueue_crds(cluster: ControlPlane) -> None:
    """Delete Kueue's CRDs (and so their objects) from a shared member, waiting until gone.

    The session fleet's members are expected to serve only the ClusterProperty CRD
    (``tests/integration/testing/test_fleet.py``).
    """
    await release_kueue_objects(cluster)
    names = [crd["metadata"]["name"] for crd in await asyncio.to_thread(kueue_manager_crds)]
    async with await cluster.client() as client:
        for name in names:
            await kube.delete(client, kube.CUSTOM_RESOURCE_DEFINITIONS, name)

        async def gone() -> bool:
            listed = await kube.list_objects(client, kube.CUSTOM_RESOURCE_DEFINITIONS)
            return not {i["metadata"]["name"] for i in listed["items"]} & set(names)

        await eventually(gone, timeout=60, what=f"Kueue's CRDs gone from {cluster.name}")


@contextlib.asynccontextmanager
async def running_kueue(
    cluster: ControlPlane,
    workdir: Path,
    *,
    namespace: str,
    access_providers: list[Mapping[str, Any]] | None = None,
) -> AsyncIterator[ManagedProcess]:
    """Kueue's manager against ``cluster``, ready (``/readyz``) when the block starts.

    Args:
        cluster: The control plane it runs against (CRDs must be installed).
        workdir: Where its configuration, certificates and log go.
        namespace: Kueue's namespace (must exist).
        access_providers: ``multiKueue.clusterProfile.accessProviders`` (the hub's Kueue);
            the feature gate ``MultiKueueClusterProfile`` is on either way.
    """
    binary = find_consumer("kueue")  # fails saying how to build it
    health = free_port()
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": namespace,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {
            "host": "127.0.0.1",
            "port": free_port(),
            "certDir": str(workdir / "webhook-certs"),
        },
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": ["batch/job"]},
        "featureGates": {"MultiKueueClusterProfile": True, "VisibilityOnDemand": False},
    }
    if access_providers is not None:
        config["multiKueue"] = {"clusterProfile": {"accessProviders": list(access_providers)}}
    config_path = await asyncio.to_thread(_prepare, workdir, config)
    proc = ManagedProcess(
        f"{cluster.name}/kueue",
        [
            str(binary),
            f"--config={config_path}",
            f"--kubeconfig={cluster.kubeconfig_path}",
            "--zap-log-level=3",
        ],
        workdir / "kueue.log",
    )
    proc.start()
    try:
        await _wait_ready(proc, health)
        yield proc
    finally:
        await proc.stop()


async def _wait_ready(proc: ManagedProcess, port: int) -> None:
    async with aiohttp.ClientSession() as session:

        async def ready() -> bool:
            if not proc.running:
                raise RuntimeError(f"Kueue exited before it was ready:\n{proc.log_tail(30)}")
            try:
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, timeout=180, what=f"Kueue ready ({proc.log_path})")


async def worker_role(cluster: ControlPlane, role: str) -> None:
    """A ClusterRole ``role`` on ``cluster`` with what MultiKueue's manager does on a worker.

    Kueue's docs give the manager's identity these rights; an inventory annotated with
    ``member-cluster-role: role`` has our manager bind its ServiceAccount to it.
    """
    verbs = ["create", "delete", "get", "list", "watch", "update", "patch"]
    async with await cluster.client() as client:
        await kube.apply(
            client,
            kube.CLUSTER_ROLES,
            {
                "metadata": {"name": role},
                "rules": [
                    {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"], "verbs": verbs},
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "resources": ["workloads", "workloads/status"],
                        "verbs": verbs,
                    },
                ],
            },
            field_manager="test",
        )


def condition(obj: Mapping[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    """The condition ``ctype`` of ``obj``'s status, or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None
