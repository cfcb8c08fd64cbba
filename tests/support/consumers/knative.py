"""The Knative Operator (``knative.dev/operator/cmd/operator``) run off-cluster against the hub.

The operator is a ``knative.dev/pkg`` ``sharedmain`` program built to run in a Pod. Run as a
process on loopback it needs, besides ``--kubeconfig`` and ``--clusterprofile-provider-file``:

- the KnativeServing CRD on the hub (from the operator's module);
- ``SYSTEM_NAMESPACE`` (where it keeps its leader-election Leases), ``POD_NAME``,
  ``METRICS_DOMAIN`` and the ``CONFIG_*_NAME`` variables its Deployment sets;
- ``KO_DATA_PATH``: the release manifests it applies (``cmd/operator/kodata`` in the module);
- ``PROFILING_PORT`` moved off 8008; its health probes listen on the fixed port 8080
  (``knative.dev/pkg/injection.HealthCheckDefaultPort``), which must be free: one operator
  runs on a machine at a time, the others (another pytest worker's) wait on a file lock.

``docs/integrations.md`` lists the same needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane, ManagedProcess, free_port
from cluster_inventory_workshop.consumers import find_consumer, knative_operator_data
from tests.support.waiting import eventually

#: The port knative.dev/pkg serves its health probes on; no flag or variable moves it.
HEALTH_PORT = 8080
#: Held while an operator runs (HEALTH_PORT is one per machine).
_PORT_LOCK = Path(tempfile.gettempdir()) / f"cluster-inventory-knative-{HEALTH_PORT}.lock"

KNATIVE_SERVINGS = kube.Resource(
    group="operator.knative.dev",
    version="v1beta1",
    plural="knativeservings",
    kind="KnativeServing",
    namespaced=True,
)
DEPLOYMENTS = kube.Resource(group="apps", version="v1", plural="deployments", kind="Deployment")
SERVING_CRD = "services.serving.knative.dev"


@contextlib.contextmanager
def _port_held() -> Iterator[None]:
    with _PORT_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's operator: wait for it to stop
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def delete_serving(
    hub: kube.ApiClient, namespace: str, name: str = "knative-serving"
) -> None:
    """Delete a KnativeServing and wait until the operator's finalizer let it go.

    Its finalizer deletes what it installed on the member: call it while both still run.
    """
    await kube.delete(hub, KNATIVE_SERVINGS, name, namespace=namespace)

    async def finalized() -> bool:
        try:
            await kube.get(hub, KNATIVE_SERVINGS, name, namespace=namespace)
        except kube.NotFoundError:
            return True
        return False

    await eventually(finalized, timeout=60, what="KnativeServing finalized")


@contextlib.asynccontextmanager
async def running_operator(
    hub: ControlPlane, workdir: Path, *, namespace: str, provider_file: Path
) -> AsyncIterator[ManagedProcess]:
    """The Knative Operator against ``hub``, started (not necessarily leading) in the block.

    Args:
        hub: The control plane holding the KnativeServings and the ClusterProfiles.
        workdir: Where its log goes.
        namespace: Its ``SYSTEM_NAMESPACE`` (must exist).
        provider_file: The access provider file (``--clusterprofile-provider-file``).
    """
    binary = find_consumer("knative-operator")  # fails saying how to build it
    kodata = await asyncio.to_thread(knative_operator_data)
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        await asyncio.to_thread(held.enter_context, _port_held())
        async with _operator(hub, workdir, binary, kodata, namespace, provider_file) as proc:
            yield proc


@contextlib.asynccontextmanager
async def _operator(
    hub: ControlPlane, workdir: Path, binary: Path, kodata: Any, namespace: str, provider_file: Path
) -> AsyncIterator[ManagedProcess]:
    proc = ManagedProcess(
        f"{hub.name}/knative-operator",
        [
            str(binary),
            f"--kubeconfig={hub.kubeconfig_path}",
            f"--clusterprofile-provider-file={provider_file}",
            # Re-reads the member's Deployments each second instead of each 10 s.
            "--remote-deployments-poll-interval=1s",
        ],
        workdir / "knative-operator.log",
        env={
            "SYSTEM_NAMESPACE": namespace,
            "POD_NAME": "knative-operator-test",
            "METRICS_DOMAIN": "knative.dev/operator",
            "CONFIG_LOGGING_NAME": "config-logging",
            "CONFIG_OBSERVABILITY_NAME": "config-observability",
            "KUBERNETES_MIN_VERSION": "",
            "KO_DATA_PATH": str(kodata),
            "PROFILING_PORT": str(free_port()),
        },
    )
    proc.start()
    try:
        yield proc
    finally:
        await proc.stop()
