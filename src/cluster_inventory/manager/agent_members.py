"""Agent members on the hub: a pull-mode member observed from what its agent reports.

A member accepted in agent mode (``docs/agent.md``) is never dialled. Its agent keeps the
MemberReport ``NS/NAME`` current and renews the heartbeat Lease ``NS/NAME``; the cluster
manager reads both from its shared cache and turns them into the same
:class:`~cluster_inventory.manager.status.Observation` a probed member's connection makes, so
placement, member-id dedupe, sharding and the profiles' status treat both kinds alike:

- :func:`agent_connection` is the member pool's key for an agent member (an
  ``agent-member://NS/NAME`` URL that is never dialled); :class:`AgentMember` takes the place
  of a :class:`~cluster_inventory.manager.member.MemberConnection` in the pool;
- :class:`~.agent_reports.AgentReports` (its own module) holds the two hub caches and
  when each heartbeat was last seen to change: a heartbeat is stale once
  ``leaseDurationSeconds x agent_heartbeat_multiple`` seconds pass on *our* monotonic clock
  without a renewal, time we could not read the Leases aside
  (:mod:`~cluster_inventory.manager.heartbeats`);
- :func:`agent_member_controller` reconciles a member when its report or Lease changes, and
  again when its heartbeat would go stale: the expiry is timed, not polled.
- :func:`agent_observation` is the pure mapping.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.views import parse_time
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.agent_reports import AgentReports
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.status import ConditionState, Observation, ObservedProperty

if TYPE_CHECKING:
    from cluster_inventory.controller import Controller

#: Makes a controller from a name, a reconcile returning a requeue delay (s), and workers.
ControllerFactory = Callable[
    [str, Callable[[Any], Coroutine[Any, Any, float | None]], int], "Controller[Any]"
]

__all__ = [
    "AGENT_SERVER_SCHEME",
    "AgentMember",
    "AgentReports",
    "agent_connection",
    "agent_member_controller",
    "agent_observation",
    "agent_of",
]

_log = logging.getLogger("cluster_inventory.manager")

#: Scheme of the member pool's key for an agent member: never dialled.
AGENT_SERVER_SCHEME = "agent-member://"


def agent_connection(namespace: str, name: str) -> kube.ClusterConnection:
    """The member pool's key for agent member ``name`` accepted in hub namespace ``namespace``.

    It is its own connection key (:func:`~cluster_inventory.manager.member.connection_key`):
    no display name, no namespace.
    """
    return kube.ClusterConnection(server=f"{AGENT_SERVER_SCHEME}{namespace}/{name}")


def agent_of(conn: kube.ClusterConnection) -> tuple[str, str] | None:
    """(namespace, name) of an agent member's key, or None for a member that is dialled."""
    if not conn.server.startswith(AGENT_SERVER_SCHEME):
        return None
    namespace, _, name = conn.server[len(AGENT_SERVER_SCHEME) :].partition("/")
    return namespace, name


def agent_observation(
    name: str, report: Mapping[str, Any] | None, stale: str | None, now: dt.datetime
) -> Observation:
    """What the manager knows of agent member ``name`` from its MemberReport.

    Args:
        name: The member's name (for messages).
        report: The MemberReport as cached (None: deleted, or not created yet).
        stale: Why its heartbeat is stale (a message), or None while it is fresh.
        now: The observation time of a property the report gives none for.

    Returns:
        ``ControlPlaneHealthy`` is the report's ``apiServerHealth`` while the heartbeat is
        fresh, Unknown (``AgentHeartbeatStale``) once it is not, Unknown
        (``AgentNotReported``) before the agent's first report; ``Joined`` is True once the
        agent reported (it holds a hub identity and writes with it). Version, member id and
        properties are the last reported, also while the heartbeat is stale (OCM keeps a
        ManagedCluster's status when its lease expires).
    """
    status = objects.status(report or {})
    if not status:
        waiting = ConditionState(
            "Unknown", "AgentNotReported", f"the agent of member {name} has not reported yet"
        )
        return Observation(
            healthy=waiting, joined=waiting, properties_error=waiting.message, properties=None
        )
    health = status.get("apiServerHealth") or {}
    healthy = ConditionState(
        str(health.get("status") or "Unknown"),
        str(health.get("reason") or "AgentReported"),
        str(health.get("message") or ""),
    )
    if stale is not None:
        healthy = ConditionState("Unknown", "AgentHeartbeatStale", stale)
    properties = tuple(
        ObservedProperty(str(p["name"]), str(p.get("value", "")), _time(p) or now)
        for p in status.get("properties") or ()
        if isinstance(p, Mapping) and p.get("name")
    )
    return Observation(
        version=status.get("kubernetesVersion") or None,
        healthy=healthy,
        joined=ConditionState("True", "AgentReporting", "the agent reports from inside the member"),
        properties=properties,
        member_id=status.get("memberID") or None,
    )


def _time(prop: Mapping[str, Any]) -> dt.datetime | None:
    return parse_time(prop.get("lastObservedTime"))


def advertised_connection(
    name: str, report: Mapping[str, Any] | None
) -> kube.ClusterConnection | None:
    """The server, CA and proxy the member's agent advertises to consumers, or None.

    A CA that is not base64 is left out with a warning (the access provider then names the
    server alone) rather than failing the member's status.
    """
    status = objects.status(report or {})
    server = status.get("server")
    if not server:
        return None
    ca: bytes | None = None
    if status.get("certificateAuthorityData"):
        try:
            ca = base64.b64decode(str(status["certificateAuthorityData"]), validate=True)
        except (binascii.Error, ValueError):
            _log.warning(
                "MemberReport %s: status.certificateAuthorityData is not base64; left out", name
            )
    return kube.ClusterConnection(
        server=str(server), ca_data=ca, proxy_url=status.get("proxyURL") or None, name=name
    )


class AgentMember:
    """An agent member in the member pool: the interface of a member connection, no connection.

    Args:
        connection: Its pool key (:func:`agent_connection`).
        config: The manager's settings.
        on_change: Called (no arguments) when the observation changes.
        reports: The hub's reports and heartbeats.
        now: Wall clock.
        registry: Where the manager's metrics are registered.
    """

    seeded = False  #: never started from another replica's verdict: the report is on the hub
    busy = False
    deferred = 0
    client: kube.ApiClient | None = None  #: the hub never dials it
    accounts = None  #: the agent keeps its consumers' credential itself (docs/agent.md)

    def __init__(
        self,
        connection: kube.ClusterConnection,
        *,
        config: ManagerConfig,
        on_change: Callable[[], None],
        reports: AgentReports,
        now: Callable[[], dt.datetime],
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        found = agent_of(connection)
        if found is None:
            raise ValueError(f"{connection.server} is not an agent member's key")
        self.connection = connection
        self.config = config
        self.name = found[1]
        self.on_change = on_change
        self.now = now
        self._reports = reports
        self._metrics = ManagerMetrics.for_registry(registry)
        self.observation = Observation()
        #: What the agent advertises to consumers (server, CA, proxy), once reported.
        self.advertised: kube.ClusterConnection | None = None
        self.observed = self.closed = False

    @property
    def label(self) -> str:
        """``agent member NS/NAME``, for logs."""
        return f"agent member {self._reports.namespace}/{self.name}"

    async def start(self, *, probe_first: bool = True) -> None:
        """Read the report and heartbeat from the cache (nothing to connect)."""
        self.refresh()

    async def properties_listed(self, timeout: float) -> bool:
        """True: the properties are in the report."""
        return True

    async def probe_safely(self) -> None:
        """Read the report again (an agent member is never probed)."""
        self.refresh()

    def fail(self, reason: str, message: str) -> None:
        """Record that the member's registration is not ready (its source says so)."""
        state = ConditionState("False", reason, message)
        self._set(dataclasses.replace(self.observation, healthy=state, joined=state))

    async def stop(self) -> None:
        """Forget it (nothing to close)."""
        self.closed = True

    def refresh(self) -> float | None:
        """Observe the cached report and heartbeat again.

        Returns:
            Seconds until the heartbeat goes stale (when to look again), or None.
        """
        report = self._reports.report(self.name)
        stale, fresh_for = self._reports.heartbeat(self.name)
        before, self.advertised = self.advertised, advertised_connection(self.name, report)
        # A new server, CA or proxy alone changes the profiles' access provider too.
        moved = self.advertised != before
        self._set(agent_observation(self.name, report, stale, self.now()), moved=moved)
        return fresh_for

    def _set(self, updated: Observation, *, moved: bool = False) -> None:
        first = not self.observed
        self.observed = True
        if updated == self.observation and not first and not moved:
            return
        before, self.observation = self.observation, updated
        if before.healthy.status != updated.healthy.status:
            self._metrics.health_transitions.labels(updated.healthy.status).inc()
        if (before.healthy.status, before.healthy.reason) != (
            updated.healthy.status,
            updated.healthy.reason,
        ):
            _log.info(
                "member healthy is %s: %s",
                updated.healthy.status,
                updated.healthy.reason,
                extra={"cluster": self.label, "detail": updated.healthy.message[:200]},
            )
        self.on_change()


def agent_member_controller(
    reports: AgentReports,
    member: Callable[[kube.ClusterConnection], object],
    controller: ControllerFactory,
) -> Controller[str]:
    """The controller observing agent members: one key per member name.

    A change of a member's report or Lease reconciles it; a reconcile asks to be run again
    when the heartbeat would go stale. Members another replica holds (or none holds) are not
    in this replica's pool: their reconcile does nothing.

    Args:
        reports: The hub's reports and heartbeats (the controller watches both caches).
        member: The pool's member for a key, or None (``MemberPool.get``).
        controller: Builds the controller (the cluster manager's, with its metrics and logs).
    """

    async def reconcile(name: str) -> float | None:
        found = member(agent_connection(reports.namespace, name))
        return found.refresh() if isinstance(found, AgentMember) else None

    built = (
        controller("cluster-manager-agents", reconcile, 1)
        .watch(reports.reports, reports.keys)
        .watch(reports.leases, reports.lease_keys)
    )

    def look_again() -> None:  # after a break every member needs its expiry timed again
        for name in reports.names():
            built.queue.add(name)

    reports.on_resume(look_again)
    return built
