"""A ClusterProfile publishing an exec access provider, and the provider config naming it.

What a consumer's render reads (the Argo CD sync's unit tests): ``profile`` is a
ClusterProfile document whose status carries one access provider (the ``secretreader`` by
default) with a server, a CA (:data:`CA`) and the KEP-5339 exec extension; ``providers`` is
the ProviderConfig whose provider of that name runs our secretreader.
"""

from __future__ import annotations

import base64
from typing import Any

from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.testing import CertificateAuthority

CA = CertificateAuthority().cert_pem


def providers(**exec_extra: Any) -> ProviderConfig:
    return ProviderConfig.from_dict(
        {
            "providers": [
                {
                    "name": "secretreader",
                    "execConfig": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "/usr/local/bin/cluster-inventory-secretreader",
                        "args": ["--namespace", "team-a"],
                        "env": [{"name": "KUBECONFIG", "value": "/etc/hub/kubeconfig"}],
                        "provideClusterInfo": True,
                        **exec_extra,
                    },
                }
            ]
        }
    )


def profile(
    name: str = "c1",
    namespace: str = "team-a",
    *,
    labels: dict[str, str] | None = None,
    ca: str | None = None,
    provider: str = "secretreader",
    server: str = "https://10.0.0.1:6443",
    **cluster: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"clusterManager": {"name": "cluster-inventory"}},
        "status": {
            "accessProviders": [
                {
                    "name": provider,
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": ca
                        if ca is not None
                        else base64.b64encode(CA).decode(),
                        "extensions": [
                            {"name": EXTENSION_EXEC, "extension": {"clusterName": name}}
                        ],
                        **cluster,
                    },
                }
            ]
        },
    }
