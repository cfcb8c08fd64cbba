"""ClusterProfiles published on the real hub the way a cluster manager publishes them.

The ``inventory`` fixture (``tests/integration/conftest.py``) gives each test an
:class:`Inventory` in its own hub namespace: ``publish`` writes a profile whose
``secretreader`` access provider points at a real member, with a member token (a
ServiceAccount allowed ConfigMaps and ServiceAccounts in the test namespace) in the hub
Secret the plugin reads, and a provider file running our ``cluster-inventory-secretreader``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    EXTENSION_EXEC,
    LABEL_INVENTORY_MEMBER_ID,
    SECRET_TOKEN_KEY,
)
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.data.provider_files import PLUGIN, provider_file

ACCOUNT = "fleet-consumer"


@dataclass
class Inventory:
    fleet: Fleet
    hub: kube.ApiClient
    namespace: str
    provider_file: Path
    tokens: dict[str, str] = field(default_factory=dict)
    extra_namespaces: list[str] = field(default_factory=list)

    def member(self, index: int) -> ControlPlane:
        return list(self.fleet.members.values())[index]

    async def token(self, member: ControlPlane) -> str:
        """A token of ``fleet-consumer`` (ConfigMaps and ServiceAccounts in the test
        namespace) on ``member``."""
        if member.name not in self.tokens:
            async with await member.client() as admin:
                try:
                    await kube.create(
                        admin,
                        kube.SERVICE_ACCOUNTS,
                        {"metadata": {"name": ACCOUNT, "namespace": self.namespace}},
                    )
                except kube.AlreadyExistsError:
                    pass
                # A Role of its own: the aggregated ``edit`` ClusterRole is empty until
                # kube-controller-manager's aggregation controller fills it.
                await kube.apply(
                    admin,
                    kube.ROLES,
                    {
                        "metadata": {"name": ACCOUNT, "namespace": self.namespace},
                        "rules": [
                            {
                                "apiGroups": [""],
                                "resources": ["configmaps", "serviceaccounts"],
                                "verbs": ["*"],
                            }
                        ],
                    },
                    field_manager="test",
                )
                await kube.apply(
                    admin,
                    kube.ROLE_BINDINGS,
                    {
                        "metadata": {"name": ACCOUNT, "namespace": self.namespace},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "Role",
                            "name": ACCOUNT,
                        },
                        "subjects": [
                            {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": self.namespace}
                        ],
                    },
                    field_manager="test",
                )
                minted = await kube.request_service_account_token(admin, self.namespace, ACCOUNT)
            self.tokens[member.name] = minted.token
        return self.tokens[member.name]

    async def namespace_for(self, suffix: str) -> str:
        """A second inventory namespace on the hub (deleted after the test)."""
        ns = f"{self.namespace}-{suffix}"[:63]
        await kube.apply(
            self.hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="test"
        )
        self.extra_namespaces.append(ns)
        return ns

    async def publish(
        self,
        name: str,
        member: ControlPlane,
        *,
        healthy: bool = True,
        namespace: str | None = None,
        secret: str | None = None,
        member_id: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Write the profile, its status and the token Secret its access provider names."""
        ns = namespace or self.namespace
        secret = secret or name
        await kube.apply(
            self.hub,
            kube.SECRETS,
            {
                "metadata": {"name": secret, "namespace": ns},
                "data": {
                    SECRET_TOKEN_KEY: base64.b64encode((await self.token(member)).encode()).decode()
                },
            },
            field_manager="test",
            force=True,
        )
        labels = {LABEL_INVENTORY_MEMBER_ID: member_id} if member_id else {}
        profile = {
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ClusterProfile",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"clusterManager": {"name": "test"}},
        }
        await kube.apply(self.hub, kube.CLUSTER_PROFILES, profile, field_manager="test", force=True)
        status = {
            "conditions": [_healthy(healthy)],
            "version": {"kubernetes": "v1.36.3"},
            "properties": [{"name": k, "value": v} for k, v in (properties or {}).items()],
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": member.server,
                        "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                        "extensions": [
                            {"name": EXTENSION_EXEC, "extension": {"clusterName": secret}}
                        ],
                    },
                }
            ],
        }
        return await self.patch_status(name, status, namespace=ns)

    async def patch_status(
        self, name: str, status: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Merge-patch the profile's status."""
        ns = namespace or self.namespace
        result: dict[str, Any] = await kube.request(
            self.hub,
            "PATCH",
            kube.CLUSTER_PROFILES.path(ns, name) + "/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )
        return result

    async def set_healthy(self, name: str, healthy: bool, *, namespace: str | None = None) -> None:
        await self.patch_status(name, {"conditions": [_healthy(healthy)]}, namespace=namespace)

    async def delete(self, name: str, *, namespace: str | None = None) -> None:
        await kube.delete(
            self.hub, kube.CLUSTER_PROFILES, name, namespace=namespace or self.namespace
        )


def _healthy(healthy: bool) -> dict[str, str]:
    return {
        "type": "ControlPlaneHealthy",
        "status": "True" if healthy else "False",
        "reason": "Healthy" if healthy else "ReadyzCheckFailed",
        "message": "test",
        "lastTransitionTime": "2026-11-23T00:00:00Z",
    }


def write_provider_file(
    path: Path, *, env: dict[str, str], namespace: str, hub: ControlPlane
) -> None:
    """Rewrite the provider file with extra plugin environment (an access input change)."""
    provider_file(
        path,
        str(PLUGIN),
        ["--namespace", namespace],
        {"KUBECONFIG": str(hub.kubeconfig_path), **env},
    )


def metric(registry: CollectorRegistry, sample: str, /, **labels: str) -> float:
    """A sample's value, 0 if absent."""
    value = registry.get_sample_value(sample, labels)
    return 0.0 if value is None else value
