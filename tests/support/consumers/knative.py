"""The Knative Operator (``knative.dev/operator/cmd/operator``) run off-cluster against the hub.

The operator is a ``knative.dev/pkg`` ``sharedmain`` program built to run in a Pod. Run as a
process on loopback it needs, besides ``--kubeconfig`` and ``--clusterprofile-provider-file``:

- the KnativeServing CRD on the hub (from the operator's module);
- ``SYSTEM_NAMESPACE`` (where it keeps its leader-election Leases), ``POD_NAME``,
  ``METRICS_DOMAIN`` and the ``CONFIG_*_NAME`` variables its Deployment sets;
- ``KO_DATA_PATH``: the release manifests it applies (``cmd/operator/kodata`` in the module);
- ``PROFILING_PORT`` moved off 8008; its health probes listen on the fixed port 8080
  (``knative.dev/pkg/injection.HealthCheckDefaultPort``), which must be free.

``docs/integrations.md`` lists the same needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from cluster_inventory.testing import ControlPlane, ManagedProcess, free_port
from cluster_inventory_workshop.consumers import find_consumer, knative_operator_data

#: The port knative.dev/pkg serves its health probes on; no flag or variable moves it.
HEALTH_PORT = 8080


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
