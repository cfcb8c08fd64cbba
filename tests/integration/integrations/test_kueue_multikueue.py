"""Kueue's own manager dispatches a Job through MultiKueue to a member of our inventory.

Everything is real except a kubelet: our cluster manager publishes the member as a
ClusterProfile (with its token Secret) in Kueue's namespace on the hub, our MultiKueue sync
writes the MultiKueueCluster and the MultiKueueConfig, and Kueue v0.19.2 (built from
``sigs.k8s.io/kueue``, :mod:`cluster_inventory.testing.consumers`) runs twice: on the hub
as the MultiKueue manager (feature gate ``MultiKueueClusterProfile``, our
``cluster-inventory-secretreader`` as its access provider) and on the member as the worker.
Kueue itself marks the MultiKueueCluster ``Active``, admits the Job on the hub and creates
its Workload and the Job on the worker. The worker has no kubelet (and no Job controller),
so the Job's pods never exist: what is shown is admission and dispatch, not execution.
How Kueue is run off-cluster is in :mod:`tests.kueue`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.multikueue import (
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    MultiKueueSync,
    kueue_configuration,
)
from cluster_inventory.manager.names import ANNOTATION_MEMBER_ROLE
from cluster_inventory.testing import ControlPlane, Fleet
from tests.kueue import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    MULTIKUEUE_CONTROLLER,
    RESOURCE_FLAVORS,
    WORKLOADS,
    condition,
    install_kueue_crds,
    running_kueue,
)
from tests.manager_harness import running_manager
from tests.provider_files import PLUGIN, provider_file
from tests.waiting import eventually

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


async def _get(client: kube.ApiClient, resource: kube.Resource, name: str, ns: str | None = None):
    try:
        return await kube.get(client, resource, name, namespace=ns)
    except kube.NotFoundError:
        return None


async def _queues(client: kube.ApiClient, prefix: str, ns: str, check: str | None) -> None:
    """A flavor, a ClusterQueue (with the MultiKueue check on the hub) and a LocalQueue."""
    await kube.apply(
        client, RESOURCE_FLAVORS, {"metadata": {"name": f"{prefix}-flavor"}}, field_manager="test"
    )
    cq: dict[str, Any] = {
        "metadata": {"name": f"{prefix}-cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": f"{prefix}-flavor",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "4"},
                                {"name": "memory", "nominalQuota": "4Gi"},
                            ],
                        }
                    ],
                }
            ],
        },
    }
    if check:
        cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    await kube.apply(client, CLUSTER_QUEUES, cq, field_manager="test")
    await kube.apply(
        client,
        LOCAL_QUEUES,
        {"metadata": {"name": "queue", "namespace": ns}, "spec": {"clusterQueue": f"{prefix}-cq"}},
        field_manager="test",
    )


def _job(name: str, ns: str) -> dict[str, Any]:
    # What Kueue's Job webhook would set (its webhook configurations are not installed):
    # suspended until admitted, and managed by MultiKueue since the ClusterQueue has its check.
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: "queue"}},
        "spec": {
            "suspend": True,
            "managedBy": MULTIKUEUE_CONTROLLER,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["pause"],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                }
            },
        },
    }


async def _workload_of(client: kube.ApiClient, ns: str, job: str) -> dict[str, Any] | None:
    listed = await kube.list_objects(client, WORKLOADS, ns)
    for item in listed["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return dict(item)
    return None


async def test_kueue_dispatches_a_job_to_the_member_our_inventory_names(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    ns = test_namespace
    short = ns[-8:]  # cluster-scoped names carry the test's digest
    worker = fleet.members[sorted(fleet.members)[0]]
    await install_kueue_crds(fleet.hub)
    await install_kueue_crds(worker)
    role = f"multikueue-worker-{short}"
    async with await worker.client() as w:
        # What MultiKueue's manager does on a worker (Kueue's docs give the manager's
        # identity these rights); our manager binds its inventory's ServiceAccount to it.
        await kube.apply(
            w,
            kube.CLUSTER_ROLES,
            {
                "metadata": {"name": role},
                "rules": [
                    {
                        "apiGroups": ["batch"],
                        "resources": ["jobs", "jobs/status"],
                        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
                    },
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "resources": ["workloads", "workloads/status"],
                        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
                    },
                ],
            },
            field_manager="test",
        )
    hub = await fleet.hub.client()
    cleanup: list[tuple[ControlPlane, kube.Resource, str]] = []
    try:
        async with running_manager(fleet, ns) as h:
            kueue_ns = await h.inventory(
                "kueue", f"kueue-{short}", annotations={ANNOTATION_MEMBER_ROLE: role}
            )
            member = f"worker-{short}"
            await h.register(member, worker, [f"kueue-{short}"])
            cleanup.append((fleet.hub, MULTIKUEUE_CONFIGS, f"{short}-fleet"))
            sync = MultiKueueSync(
                hub,
                kueue_namespace=kueue_ns,
                config_name=f"{short}-fleet",
                registry=CollectorRegistry(),
                identity="test",
            )
            await sync.start()
            providers = provider_file(
                tmp_path / "providers.json",
                str(PLUGIN),
                ["--namespace", kueue_ns],
                {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
            )
            fragment = kueue_configuration(load_provider_file(providers), namespace=kueue_ns)
            access = fragment["multiKueue"]["clusterProfile"]["accessProviders"]
            try:
                async with (
                    running_kueue(worker, tmp_path / "worker", namespace=ns),
                    running_kueue(
                        fleet.hub, tmp_path / "hub", namespace=kueue_ns, access_providers=access
                    ) as manager_kueue,
                ):
                    # Kueue itself connects to the member through our plugin.
                    async def active() -> dict[str, Any] | None:
                        mkc = await _get(hub, MULTIKUEUE_CLUSTERS, member)
                        cond = condition(mkc, "Active")
                        return cond if cond and cond["status"] == "True" else None

                    cond = await eventually(
                        active, timeout=90, what=f"MultiKueueCluster {member} Active=True"
                    )
                    assert cond["reason"] == "Active", cond
                    mkc = await kube.get(hub, MULTIKUEUE_CLUSTERS, member)
                    assert mkc["spec"]["clusterSource"] == {"clusterProfileRef": {"name": member}}
                    config = await kube.get(hub, MULTIKUEUE_CONFIGS, f"{short}-fleet")
                    assert config["spec"]["clusters"] == [member]

                    check = f"{short}-multikueue"
                    cleanup += [
                        (fleet.hub, ADMISSION_CHECKS, check),
                        (fleet.hub, CLUSTER_QUEUES, f"{short}-cq"),
                        (fleet.hub, RESOURCE_FLAVORS, f"{short}-flavor"),
                    ]
                    await kube.apply(
                        hub,
                        ADMISSION_CHECKS,
                        {
                            "metadata": {"name": check},
                            "spec": {
                                "controllerName": MULTIKUEUE_CONTROLLER,
                                "parameters": {
                                    "apiGroup": "kueue.x-k8s.io",
                                    "kind": "MultiKueueConfig",
                                    "name": f"{short}-fleet",
                                },
                            },
                        },
                        field_manager="test",
                    )
                    await _queues(hub, short, ns, check)
                    async with await worker.client() as w:
                        cleanup += [
                            (worker, CLUSTER_QUEUES, f"{short}-cq"),
                            (worker, RESOURCE_FLAVORS, f"{short}-flavor"),
                        ]
                        await _queues(w, short, ns, None)

                        async def cq_active() -> bool:
                            cq = await _get(hub, CLUSTER_QUEUES, f"{short}-cq")
                            return (condition(cq, "Active") or {}).get("status") == "True"

                        await eventually(cq_active, timeout=60, what="hub ClusterQueue active")

                        await kube.create(hub, JOBS, _job("first", ns))

                        async def dispatched() -> tuple[dict, dict, dict] | None:
                            local = await _workload_of(hub, ns, "first")
                            if local is None:
                                return None
                            remote = await _get(w, WORKLOADS, local["metadata"]["name"], ns)
                            remote_job = await _get(w, JOBS, "first", ns)
                            if remote is None or remote_job is None:
                                return None
                            return local, remote, remote_job

                        local, remote, remote_job = await eventually(
                            dispatched, timeout=120, what="the Workload and the Job on the worker"
                        )
                        # Admitted on the hub (quota, then the MultiKueue check) ...
                        assert (condition(local, "QuotaReserved") or {}).get("status") == "True"
                        # ... reserved on the worker by the worker's Kueue ...
                        assert (condition(remote, "QuotaReserved") or {}).get("status") == "True"
                        # ... and the Job created there by MultiKueue: no kubelet, so no pods.
                        assert remote_job["metadata"]["labels"].get(QUEUE_LABEL) == "queue"

                        async def hub_knows_the_worker() -> dict[str, Any] | None:
                            current = await _workload_of(hub, ns, "first")
                            status = (current or {}).get("status") or {}
                            return current if status.get("clusterName") == member else None

                        await eventually(
                            hub_knows_the_worker, timeout=60, what="status.clusterName on the hub"
                        )

                        # The member leaves the inventory: our manager deletes its profile,
                        # our sync its MultiKueueCluster (and the now empty config) ...
                        await h.deregister(member)

                        async def gone() -> bool:
                            return await _get(hub, MULTIKUEUE_CLUSTERS, member) is None

                        await eventually(gone, timeout=60, what="MultiKueueCluster deleted")

                        # ... and Kueue stops dispatching: its check and queue go inactive,
                        # and a new Job is not admitted, so nothing reaches the worker.
                        async def inactive() -> dict[str, Any] | None:
                            ac = await _get(hub, ADMISSION_CHECKS, check)
                            cond = condition(ac, "Active")
                            return cond if cond and cond["status"] == "False" else None

                        ac_cond = await eventually(inactive, timeout=60, what="check inactive")
                        await kube.create(hub, JOBS, _job("second", ns))

                        async def refused() -> dict[str, Any] | None:
                            wl = await _workload_of(hub, ns, "second")
                            cond = condition(wl, "QuotaReserved")
                            return cond if cond and cond["status"] == "False" else None

                        refusal = await eventually(refused, timeout=60, what="second refused")
                        assert "inactive" in refusal["message"], refusal
                        assert await _get(w, JOBS, "second", ns) is None
                        print(
                            json.dumps(
                                {
                                    "mkc": cond,
                                    "check": ac_cond,
                                    "second": refusal,
                                    "log": str(manager_kueue.log_path),
                                },
                                indent=1,
                            )
                        )
            finally:
                await sync.stop()
    finally:
        await hub.close()
        await _clean(fleet, worker, ns, role, cleanup)


async def _clean(
    fleet: Fleet,
    worker: ControlPlane,
    ns: str,
    role: str,
    cleanup: list[tuple[ControlPlane, kube.Resource, str]],
) -> None:
    """Delete the cluster-scoped objects; free the Workloads Kueue (now stopped) holds."""
    for cluster in (fleet.hub, worker):
        async with await cluster.client() as client:
            for wl in (await kube.list_objects(client, WORKLOADS, ns))["items"]:
                await kube.request(
                    client,
                    "PATCH",
                    WORKLOADS.path(ns, wl["metadata"]["name"]),
                    body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
            for owner, resource, name in reversed(cleanup):
                if owner is cluster:
                    await kube.delete(client, resource, name)
            if cluster is worker:
                await kube.delete(client, kube.CLUSTER_ROLES, role)
