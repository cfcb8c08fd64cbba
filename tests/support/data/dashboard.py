"""What the dashboard's unit tests feed it: profile views and a hub state held in memory.

``profile`` is a :class:`~cluster_inventory.api.views.ProfileView` as the dashboard reads one
(health, member id, version, properties, labels); ``NOW`` the instant its ages count from;
``FakeState`` what :class:`~cluster_inventory.dashboard.Dashboard` reads of a HubState,
without a hub (``bump`` wakes the streams).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard import build

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def profile(
    ns: str,
    name: str,
    *,
    healthy: str | None = "True",
    member: str | None = None,
    version: str = "v1.36.3",
    properties: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    manager: str = "m",
) -> ProfileView:
    conditions = []
    if healthy is not None:
        conditions.append(
            {
                "type": "ControlPlaneHealthy",
                "status": healthy,
                "reason": "Healthy" if healthy == "True" else "APIServerUnreachable",
                "message": "probe",
            }
        )
    all_labels = {"x-k8s.io/cluster-manager": manager, **(labels or {})}
    if member:
        all_labels[LABEL_INVENTORY_MEMBER_ID] = member
    return ProfileView.of(
        {
            "metadata": {
                "namespace": ns,
                "name": name,
                "labels": all_labels,
                "resourceVersion": "1",
            },
            "spec": {"clusterManager": {"name": manager}},
            "status": {
                "conditions": conditions,
                "version": {"kubernetes": version},
                "properties": [{"name": k, "value": v} for k, v in (properties or {}).items()],
            },
        }
    )


class FakeState:
    """What :class:`Dashboard` reads of a HubState, without a hub."""

    namespaces = ("inv",)
    sources: dict[str, Any] = {}
    synced = True

    def __init__(self) -> None:
        self.generation = 0
        self._wake = asyncio.Event()
        self._overview = build([profile("inv", "a")], now=NOW)

    def overview(self):
        return self._overview

    def bump(self) -> None:
        self.generation += 1
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def changed(self, since: int) -> int:
        while self.generation <= since:
            await self._wake.wait()
        return self.generation

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass
