"""Kueue's own manager dispatches a Job through MultiKueue to a member of our inventory.

Everything is real except a kubelet: our cluster manager publishes two members as
ClusterProfiles (with their token Secrets) in Kueue's namespace on the hub, our MultiKueue
sync writes the MultiKueueClusters and the MultiKueueConfig, and Kueue v0.19.2 (built from
``sigs.k8s.io/kueue``, :mod:`cluster_inventory_workshop.consumers`) runs on the hub as the
MultiKueue manager (feature gate ``MultiKueueClusterProfile``, our
``cluster-inventory-secretreader`` as its access provider) and on the first member as the
worker; the second member has only Kueue's CRDs. Kueue itself marks both
MultiKueueClusters ``Active``, admits a Job on the hub and creates its Workload and the Job
on the worker. Taking the worker out of the inventory removes its MultiKueueCluster, and
the next Job's Workload goes to the other member only. The members have no kubelet (and
no Job controller), so the Job's pods never exist: what is shown is admission and
dispatch, not execution. How Kueue is run off-cluster is in :mod:`tests.support.consumers.kueue`.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.multikueue import (
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    MultiKueueSync,
    kueue_configuration,
)
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.consumers.kueue import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    MULTIKUEUE_CONTROLLER,
    RESOURCE_FLAVORS,
    WORKLOADS,
    condition,
    install_kueue_crds,
    release_kueue_objects,
    remove_kueue_crds,
    running_kueue,
    worker_role,
)
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually

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
    # Two members in Kueue's inventory: "worker" runs Kueue, "spare" only has its CRDs
    # (enough for Active=True; a Workload sent there is never admitted).
    first, second = (fleet.members[name] for name in sorted(fleet.members)[:2])
    role = f"multikueue-worker-{short}"
    for cluster in (fleet.hub, first, second):
        await install_kueue_crds(cluster)
    for cluster in (first, second):
        await worker_role(cluster, role)
    worker, spare = f"worker-{short}", f"spare-{short}"
    config_name = f"{short}-fleet"
    check = f"{short}-multikueue"
    cleanup = [
        (fleet.hub, MULTIKUEUE_CONFIGS, config_name),
        (fleet.hub, ADMISSION_CHECKS, check),
        (fleet.hub, CLUSTER_QUEUES, f"{short}-cq"),
        (fleet.hub, RESOURCE_FLAVORS, f"{short}-flavor"),
    ]
    try:
        async with contextlib.AsyncExitStack() as stack:
            h = await stack.enter_async_context(
                running_manager(fleet, ns, member_roles={f"kueue-{short}": (role,)})
            )
            hub = h.hub_client
            kueue_ns = await h.inventory(
                "kueue", f"kueue-{short}", annotations={ANNOTATION_MEMBER_ROLE: role}
            )
            await h.register(worker, first, [f"kueue-{short}"])
            await h.register(spare, second, [f"kueue-{short}"])
            sync = MultiKueueSync(
                hub,
                kueue_namespace=kueue_ns,
                config_name=config_name,
                registry=CollectorRegistry(),
                identity="test",
            )
            await sync.start()
            stack.push_async_callback(sync.stop)
            providers = provider_file(
                tmp_path / "providers.json",
                str(PLUGIN),
                ["--namespace", kueue_ns],
                {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
            )
            fragment = kueue_configuration(load_provider_file(providers), namespace=kueue_ns)
            access = fragment["multiKueue"]["clusterProfile"]["accessProviders"]
            await stack.enter_async_context(running_kueue(first, tmp_path / "worker", namespace=ns))
            manager_kueue = await stack.enter_async_context(
                running_kueue(
                    fleet.hub, tmp_path / "hub", namespace=kueue_ns, access_providers=access
                )
            )
            w = await stack.enter_async_context(await first.client())
            s = await stack.enter_async_context(await second.client())

            # Kueue itself connects to each member through our plugin.
            async def active() -> dict[str, dict[str, Any]] | None:
                found = {}
                for name in (worker, spare):
                    cond = condition(await _get(hub, MULTIKUEUE_CLUSTERS, name), "Active")
                    if not cond or cond["status"] != "True":
                        return None
                    found[name] = cond
                return found

            mkc_conditions = await eventually(
                active,
                timeout=90,
                what=f"both MultiKueueClusters Active ({manager_kueue.log_path})",
            )
            assert {c["reason"] for c in mkc_conditions.values()} == {"Active"}, mkc_conditions
            mkc = await kube.get(hub, MULTIKUEUE_CLUSTERS, worker)
            assert mkc["spec"]["clusterSource"] == {"clusterProfileRef": {"name": worker}}
            config = await kube.get(hub, MULTIKUEUE_CONFIGS, config_name)
            assert config["spec"]["clusters"] == sorted([spare, worker])

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
                            "name": config_name,
                        },
                    },
                },
                field_manager="test",
            )
            await _queues(hub, short, ns, check)
            await _queues(w, short, ns, None)

            async def cq_active() -> bool:
                cq = await _get(hub, CLUSTER_QUEUES, f"{short}-cq")
                return (condition(cq, "Active") or {}).get("status") == "True"

            await eventually(cq_active, timeout=60, what="hub ClusterQueue active")
            await kube.create(hub, JOBS, _job("first", ns))

            async def dispatched() -> tuple[dict[str, Any], dict[str, Any]] | None:
                local = await _workload_of(hub, ns, "first")
                if local is None or (local.get("status") or {}).get("clusterName") != worker:
                    return None
                remote = await _get(w, WORKLOADS, local["metadata"]["name"], ns)
                remote_job = await _get(w, JOBS, "first", ns)
                return (remote, remote_job) if remote and remote_job else None

            remote, remote_job = await eventually(
                dispatched, timeout=120, what="the Workload and the Job on the worker"
            )
            # Reserved on the worker by the worker's Kueue, and the Job created there by
            # MultiKueue (no kubelet and no Job controller: its pods never exist).
            assert (condition(remote, "QuotaReserved") or {}).get("status") == "True"
            assert remote_job["metadata"]["labels"].get(QUEUE_LABEL) == "queue"
            local = await _workload_of(hub, ns, "first")
            assert (condition(local, "QuotaReserved") or {}).get("status") == "True"

            # The worker leaves the inventory: our manager deletes its profile, our sync its
            # MultiKueueCluster and the config's entry ...
            await h.deregister(worker)

            async def only_spare() -> bool:
                gone = await _get(hub, MULTIKUEUE_CLUSTERS, worker) is None
                config = await _get(hub, MULTIKUEUE_CONFIGS, config_name)
                return gone and (config or {}).get("spec", {}).get("clusters") == [spare]

            await eventually(only_spare, timeout=60, what="worker's MultiKueueCluster gone")
            # ... and Kueue stops dispatching there: the next Job's Workload goes to the
            # spare member only.
            await kube.create(hub, JOBS, _job("second", ns))

            async def sent_to_spare() -> dict[str, Any] | None:
                local = await _workload_of(hub, ns, "second")
                if local is None:
                    return None
                return await _get(s, WORKLOADS, local["metadata"]["name"], ns)

            on_spare = await eventually(sent_to_spare, timeout=60, what="second on the spare")
            assert await _get(w, WORKLOADS, on_spare["metadata"]["name"], ns) is None
            assert await _get(w, JOBS, "second", ns) is None
            print(
                json.dumps(
                    {"multiKueueClusters": mkc_conditions, "log": str(manager_kueue.log_path)},
                    indent=1,
                )
            )
    finally:
        await _clean(fleet, (first, second), role, cleanup)


async def _clean(
    fleet: Fleet,
    workers: tuple[ControlPlane, ...],
    role: str,
    cleanup: list[tuple[ControlPlane, kube.Resource, str]],
) -> None:
    """Delete what the test made outside its namespace; Kueue's CRDs leave the members."""
    await release_kueue_objects(fleet.hub)
    async with await fleet.hub.client() as hub:
        for owner, resource, name in reversed(cleanup):
            if owner is fleet.hub:
                await kube.delete(hub, resource, name)
    for worker in workers:
        async with await worker.client() as client:
            await kube.delete(client, kube.CLUSTER_ROLES, role)
        await remove_kueue_crds(worker)
