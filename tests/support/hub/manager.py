"""A cluster manager running in the test's event loop against the session fleet.

Each test gets its own manager (name, hub namespace for registrations, member namespace for
ServiceAccounts) so that tests cannot see each other's profiles, and helpers to register
members and to wait for conditions without sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig, registration_secret
from cluster_inventory.testing import ControlPlane, Fleet


class Clock:
    """A wall clock the test can move forward."""

    def __init__(self) -> None:
        self.offset = dt.timedelta()

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset


@dataclass
class Harness:
    fleet: Fleet
    hub_client: kube.ApiClient
    namespace: str
    manager: ClusterManagerRunnable
    clock: Clock
    created_namespaces: list[str] = field(default_factory=list)
    #: The manager's task (done only if it ended or failed).
    task: asyncio.Task[None] | None = None

    @property
    def hub(self) -> ControlPlane:
        return self.fleet.hub

    def member(self, index: int) -> ControlPlane:
        return list(self.fleet.members.values())[index]

    async def register(
        self, name: str, member: ControlPlane, clustersets: list[str], kubeconfig: str | None = None
    ) -> None:
        text = kubeconfig if kubeconfig is not None else yaml.safe_dump(member.kubeconfig())
        secret = registration_secret(name, self.namespace, text, clustersets)
        await kube.apply(self.hub_client, kube.SECRETS, secret, field_manager="test")

    async def deregister(self, name: str) -> None:
        await kube.delete(self.hub_client, kube.SECRETS, name, namespace=self.namespace)

    async def inventory(
        self, name: str, clusterset: str | None, annotations: dict | None = None
    ) -> str:
        ns = f"{self.namespace}-{name}"[:63]
        labels = {LABEL_CLUSTER_SET: clusterset} if clusterset else {}
        await kube.apply(
            self.hub_client,
            kube.NAMESPACES,
            {"metadata": {"name": ns, "labels": labels, "annotations": annotations or {}}},
            field_manager="test",
        )
        if ns not in self.created_namespaces:
            self.created_namespaces.append(ns)
        return ns

    async def profile(self, ns: str, name: str) -> dict[str, Any]:
        return await kube.get(self.hub_client, kube.CLUSTER_PROFILES, name, namespace=ns)

    async def profile_names(self, ns: str) -> set[str]:
        listed = await kube.list_objects(self.hub_client, kube.CLUSTER_PROFILES, namespace=ns)
        return {i["metadata"]["name"] for i in listed["items"]}

    async def condition(self, ns: str, name: str, ctype: str) -> dict[str, Any] | None:
        profile = await self.profile(ns, name)
        for cond in (profile.get("status") or {}).get("conditions") or ():
            if cond["type"] == ctype:
                return cond
        return None


@contextlib.asynccontextmanager
async def running_manager(
    fleet: Fleet, test_namespace: str, *, manager_hub: kube.ApiClient | None = None, **config: Any
) -> AsyncIterator[Harness]:
    """A manager of the test's own (name, namespaces), with ``config`` overriding settings.

    ``manager_hub`` is the manager's own hub client (e.g. through a fault proxy); the
    harness reads and writes the hub with a direct client either way.
    """
    clock = Clock()
    hub_client = await fleet.hub.client()
    settings: dict[str, Any] = {
        "name": f"m-{test_namespace[-8:]}",
        "namespace": test_namespace,
        "member_namespace": test_namespace,
        "probe_interval": 0.5,
        "probe_timeout": 2.0,
        "workers": 4,
        # The agent tests' heartbeats last 1-2 s: the manager counts a Lease's own duration
        # only within its bounds (10 s and up by default, docs/agent.md).
        "agent_lease_duration_min": 0.5,
    }
    manager = ClusterManagerRunnable(
        manager_hub or hub_client,
        ManagerConfig(**{**settings, **config}),
        now=clock,
        registry=CollectorRegistry(),
        identity="test",
    )
    task = asyncio.get_running_loop().create_task(manager.run())
    h = Harness(fleet, hub_client, test_namespace, manager, clock, task=task)
    try:
        await asyncio.wait_for(manager.synced.wait(), 30)
        yield h
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for ns in h.created_namespaces:
            await kube.delete(hub_client, kube.NAMESPACES, ns)
        await hub_client.close()
