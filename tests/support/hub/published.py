"""A member ServiceAccount token published the way the cluster manager publishes it.

Each test gets: a ServiceAccount ``consumer`` on the first member bound to ``view`` in the
test namespace, a token minted for it with TokenRequest, the hub Secret
``<test-ns>/<profile>`` holding it (keys ``token`` and ``expirationTimestamp``), a
ClusterProfile advertising the ``secretreader`` access provider, and a provider file whose
plugin is our ``cluster-inventory-secretreader`` reading the hub with the admin kubeconfig.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.api._base import format_time
from cluster_inventory.api.constants import (
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
)
from cluster_inventory.testing import ControlPlane

PROFILE = "member-one"


@dataclass
class Published:
    namespace: str
    member: ControlPlane
    hub: ControlPlane
    profile: dict
    provider_file: Path

    async def mint(self, *, recreate: bool = False) -> str:
        """Mint a token for the consumer account and store it in the hub Secret."""
        async with await self.member.client() as admin:
            if recreate:
                await kube.delete(
                    admin, kube.SERVICE_ACCOUNTS, "consumer", namespace=self.namespace
                )
            await ensure_account(admin, self.namespace)
            minted = await kube.request_service_account_token(admin, self.namespace, "consumer")
        await self.store(minted.token, format_time(minted.expiration))
        return minted.token

    async def store(self, token: str, expiration: str | None) -> None:
        data = {SECRET_TOKEN_KEY: base64.b64encode(token.encode()).decode()}
        if expiration:
            data[SECRET_EXPIRATION_KEY] = base64.b64encode(expiration.encode()).decode()
        async with await self.hub.client() as hub:
            await kube.apply(
                hub,
                kube.SECRETS,
                {"metadata": {"name": PROFILE, "namespace": self.namespace}, "data": data},
                field_manager="test",
                force=True,
            )


async def ensure_account(admin: kube.ApiClient, namespace: str) -> None:
    try:
        await kube.create(
            admin, kube.SERVICE_ACCOUNTS, {"metadata": {"name": "consumer", "namespace": namespace}}
        )
    except kube.AlreadyExistsError:
        pass
    await kube.apply(
        admin,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "hello", "namespace": namespace}, "data": {"from": "member"}},
        field_manager="test",
    )
    await kube.apply(
        admin,
        kube.ROLE_BINDINGS,
        {
            "metadata": {"name": "consumer-view", "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "consumer", "namespace": namespace}],
        },
        field_manager="test",
    )
