"""Install CustomResourceDefinitions and wait until the API server serves them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import apply, get, request
from cluster_inventory.kube.errors import KubeAPIError, KubeError
from cluster_inventory.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

__all__ = ["CRDNotEstablishedError", "ensure_crds"]

FIELD_MANAGER = "cluster-inventory"


class CRDNotEstablishedError(KubeError):
    """A CRD was accepted but did not become Established and served in time."""


async def ensure_crds(
    client: ApiClient,
    crds: Sequence[dict[str, Any]],
    *,
    timeout: float = 30.0,
    field_manager: str = FIELD_MANAGER,
) -> None:
    """Apply CRDs (server-side) and wait until each is Established and served.

    Served means every served version answers a LIST.

    Args:
        client: A client allowed to write CRDs.
        crds: CustomResourceDefinition objects.
        timeout: Seconds to wait for all of them.
        field_manager: Server-side-apply field manager.

    Raises:
        KubeAPIError: The API server refused a CRD (the message names the field).
        CRDNotEstablishedError: A CRD was not served within ``timeout`` seconds.
    """
    for crd in crds:
        await apply(client, CUSTOM_RESOURCE_DEFINITIONS, crd, field_manager=field_manager)
    deadline = time.monotonic() + timeout
    for crd in crds:
        name = crd["metadata"]["name"]
        group = crd["spec"]["group"]
        plural = crd["spec"]["names"]["plural"]
        versions = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
        while True:
            stored = await get(client, CUSTOM_RESOURCE_DEFINITIONS, name)
            conditions = {
                c["type"]: c["status"] for c in (stored.get("status") or {}).get("conditions") or []
            }
            if conditions.get("Established") == "True":
                try:
                    for version in versions:
                        await request(client, "GET", f"/apis/{group}/{version}/{plural}")
                    break
                except KubeAPIError:
                    pass
            if time.monotonic() > deadline:
                raise CRDNotEstablishedError(
                    f"CustomResourceDefinition {name} not established after {timeout:.0f} s"
                )
            await asyncio.sleep(0.05)
