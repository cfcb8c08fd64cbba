"""The hub's MemberReports and heartbeat Leases of agent members, from the shared cache.

:class:`AgentReports` holds the two hub caches (``docs/agent.md``, "The hub side") and when
each heartbeat was last seen to change
(:class:`~cluster_inventory.manager.rules.heartbeat_staleness.Heartbeats`, the pure timing
rule: our own monotonic clock, never the agent's; our own blindness never counts against an
agent). :mod:`.agent_member` turns what it holds into observations.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_AGENT
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.heartbeat_staleness import Heartbeats, counted_duration

__all__ = ["AgentReports"]

_log = logging.getLogger("cluster_inventory.manager")


class AgentReports:
    """The hub's MemberReports and heartbeat Leases of agent members, from the shared cache.

    Args:
        hub: The hub client (its :class:`~cluster_inventory.kube.InformerCache` is used).
        config: The manager's settings: ``namespace`` (where ``manager accept`` writes),
            ``agent_heartbeat_multiple`` and the lease duration and its bounds
            (``agent_lease_duration``, ``_min``, ``_max``).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.namespace = config.namespace
        self.multiple = config.agent_heartbeat_multiple
        self.config = config
        #: Members whose Lease names a duration outside the bounds, and the value (said once).
        self._ignored: dict[str, Any] = {}
        cache = kube.InformerCache.for_client(hub)
        self.reports = cache.informer(
            kube.MEMBER_REPORTS,
            namespaces=[config.namespace],
            label_selector=LABEL_AGENT,
            name="hub MemberReports",
        )
        self.leases = cache.informer(
            kube.LEASES,
            namespaces=[config.namespace],
            label_selector=LABEL_AGENT,
            name="hub agent heartbeat Leases",
        )
        self.beats = Heartbeats(config.agent_heartbeat_multiple, clock)
        self._on_resume: list[Callable[[], None]] = []
        #: Members whose heartbeat :meth:`heartbeat` last found stale.
        self._stale: set[str] = set()
        self.leases.add_handler(self._on_lease)
        self.leases.add_health_handler(self._on_view)

    def _on_lease(self, event: str, lease: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = str(objects.meta(lease).get("name"))
        if event == "DELETED":
            self.beats.forget(name)
            self._ignored.pop(name, None)
        else:
            self.beats.renewed(name, objects.spec(lease).get("renewTime"))

    def _on_view(self) -> None:
        """The Lease watch broke or works again: our blindness never counts against agents."""
        if self.leases.failure is not None:
            self.beats.blinded()
        elif self.beats.resumed(self._duration):
            for handler in self._on_resume:
                handler()

    def on_resume(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` when the view of the Leases works again after a break."""
        self._on_resume.append(handler)

    def names(self) -> list[str]:
        """Every member with a heartbeat Lease in the cache."""
        return [str(objects.meta(lease).get("name")) for lease in self.leases.items()]

    def _duration(self, name: str) -> float:
        """The lease duration of ``name``'s grace: its Lease's within the bounds, else ours."""
        lease = self.leases.get(f"{self.namespace}/{name}") or {}
        given = objects.spec(lease).get("leaseDurationSeconds")
        c = self.config
        duration, ignored = counted_duration(
            given,
            configured=c.agent_lease_duration,
            low=c.agent_lease_duration_min,
            high=c.agent_lease_duration_max,
        )
        if not ignored:
            self._ignored.pop(name, None)
        elif self._ignored.get(name, object()) != given:
            self._ignored[name] = given
            _log.warning(
                "the heartbeat Lease %s/%s names leaseDurationSeconds %.40r, outside the "
                "manager's %g-%g s: its grace is counted in the manager's %g s",
                self.namespace,
                name,
                given,
                c.agent_lease_duration_min,
                c.agent_lease_duration_max,
                duration,
            )
        return duration

    @staticmethod
    def keys(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        """The member an event of either cache concerns (a controller's map function)."""
        return [str(objects.meta(obj).get("name"))]

    def lease_keys(
        self, event: str, lease: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        """The member a Lease event may change the status of (the Lease cache's map function).

        A renewal of a heartbeat that is fresh only moves its deadline: the reconcile timed
        at the old deadline finds the new one and asks again for the new one, so a member
        costs one reconcile per ``duration x multiple`` at rest, not one per renewal (10,000
        agents renewing every 60 s are 167 events/s). A Lease added, deleted, renewed while
        stale, or whose ``leaseDurationSeconds`` changed is reconciled at once.
        """
        name = str(objects.meta(lease).get("name"))
        if (
            event == "DELETED"
            or old is None
            or name in self._stale
            or objects.spec(old).get("leaseDurationSeconds")
            != objects.spec(lease).get("leaseDurationSeconds")
        ):
            return [name]
        return []

    def report(self, name: str) -> dict[str, Any] | None:
        """The cached MemberReport of ``name``, or None."""
        return self.reports.get(f"{self.namespace}/{name}")

    def joined(self, name: str) -> bool:
        """True once an agent of ``name`` wrote on the hub: its Lease renewed, or a report.

        ``manager accept`` creates both without either (and ``reject`` deletes them), so
        this is the current acceptance's agent having joined (the CSR approver takes no
        bootstrap credential's request after it).
        """
        lease = self.leases.get(f"{self.namespace}/{name}")
        return bool(
            objects.spec(lease or {}).get("renewTime") or objects.status(self.report(name) or {})
        )

    def heartbeat(self, name: str) -> tuple[str | None, float | None]:
        """(why the heartbeat of ``name`` is stale or None, seconds until it goes stale or None).

        A Lease that is missing is stale at once; one never seen renewed counts from when
        this replica first saw it; time this replica could not read the Leases does not
        count (:mod:`~cluster_inventory.manager.rules.heartbeat_staleness`): while it cannot,
        no heartbeat turns stale and there is no time to look again (the resume is).
        """
        lease = self.leases.get(f"{self.namespace}/{name}")
        if lease is None:
            self._stale.add(name)
            return f"the heartbeat Lease {self.namespace}/{name} does not exist", None
        duration = self._duration(name)
        age, fresh_for = self.beats.verdict(name, objects.spec(lease).get("renewTime"), duration)
        if age < duration * self.multiple:
            self._stale.discard(name)
            return None, fresh_for
        self._stale.add(name)
        ours = (
            f"; its leaseDurationSeconds is outside the manager's "
            f"{self.config.agent_lease_duration_min:g}-{self.config.agent_lease_duration_max:g} s"
            if name in self._ignored
            else ""
        )
        return (
            f"the agent's heartbeat Lease {self.namespace}/{name} was not renewed for {age:.0f} s "
            f"(lease duration {duration:g} s x {self.multiple:g}{ours})",
            None,
        )
