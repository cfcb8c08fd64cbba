"""Agent members on the hub: a pull-mode member observed from what its agent reports.

A member accepted in agent mode (``docs/agent.md``) is never dialled. Its agent keeps the
MemberReport ``NS/NAME`` current and renews the heartbeat Lease ``NS/NAME``; the cluster
manager reads both from its shared cache and turns them into the same
:class:`~cluster_inventory.manager.rules.status.Observation` a probed member's connection makes, so
inventories, member-id dedupe, sharding and the profiles' status treat both kinds alike:

- :class:`~cluster_inventory.manager.rules.member_keys.AgentMemberKey` is the member pool's
  key for an agent member (never dialled); :class:`AgentMember` takes the place of a
  :class:`~cluster_inventory.manager.members.connection.MemberConnection` in the pool;
- :class:`~.agent_reports.AgentReports` (its own module) holds the two hub caches and
  when each heartbeat was last seen to change: a heartbeat is stale once a lease duration
  (the Lease's within the manager's bounds, else the manager's) x
  ``agent_heartbeat_multiple`` seconds pass on *our* monotonic clock without a renewal,
  time we could not read the Leases aside
  (:mod:`~cluster_inventory.manager.rules.heartbeat_staleness`);
- every field of the report is checked before it is copied, and a refused one keeps its
  last good value (:mod:`~cluster_inventory.manager.rules.agent_report_fields`, pure;
  ``ReportValid`` on the profiles);
- the agent member controller
  (:mod:`~cluster_inventory.manager.controllers.agent_member_controller`) refreshes a member
  when its report or Lease changes, and again when its heartbeat would go stale: the expiry
  is timed, not polled;
- :func:`agent_observation` is the pure mapping.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import CONDITION_REPORT_VALID, REASON_AGENT_REPORTED
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.members.agent_reports import AgentReports
from cluster_inventory.manager.rules.agent_report_fields import (
    CheckedReport,
    ReportFields,
    check_report,
)
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.manager.rules.status import ConditionState, Observation
from cluster_inventory.proxy import member_proxy_url, member_server

__all__ = [
    "AgentMember",
    "AgentReports",
    "agent_observation",
]

_log = logging.getLogger("cluster_inventory.manager")


def agent_observation(name: str, checked: CheckedReport | None, stale: str | None) -> Observation:
    """What the manager knows of agent member ``name`` from its checked MemberReport.

    Args:
        name: The member's name (for messages).
        checked: The report's fields as :func:`~.agent_report_fields.check_report` let them
            through (None: no status yet, or no report).
        stale: Why its heartbeat is stale (a message), or None while it is fresh.

    Returns:
        ``ControlPlaneHealthy`` is the report's ``apiServerHealth`` while the heartbeat is
        fresh, Unknown (``AgentHeartbeatStale``) once it is not, Unknown
        (``AgentNotReported``) before the agent's first report; ``Joined`` is True once the
        agent reported (it holds a hub identity and writes with it); ``ReportValid`` says
        which fields were refused. Version, member id and properties are the last good
        ones reported, also while the heartbeat is stale (OCM keeps a ManagedCluster's
        status when its lease expires).
    """
    if checked is None:
        waiting = ConditionState(
            "Unknown", "AgentNotReported", f"the agent of member {name} has not reported yet"
        )
        return Observation(
            healthy=waiting, joined=waiting, properties_error=waiting.message, properties=None
        )
    fields = checked.fields
    healthy = fields.health or ConditionState("Unknown", REASON_AGENT_REPORTED, "")
    if stale is not None:
        healthy = ConditionState("Unknown", "AgentHeartbeatStale", stale)
    return Observation(
        version=fields.version,
        healthy=healthy,
        joined=ConditionState("True", "AgentReporting", "the agent reports from inside the member"),
        properties=fields.properties,
        properties_error=(
            None
            if fields.properties is not None
            else f"the agent's properties were refused (condition {CONDITION_REPORT_VALID})"
        ),
        member_id=fields.member_id,
        report_valid=checked.condition(),
    )


def advertised_connection(
    name: str, fields: ReportFields | None, cluster_proxy_url: str | None = None
) -> kube.ClusterConnection | None:
    """How consumers reach the member: through the cluster proxy, or as its agent advertises.

    Args:
        name: The member's name (the connection's).
        fields: The report's checked fields (:class:`~.agent_report_fields.ReportFields`).
        cluster_proxy_url: The hub's cluster proxy for consumers (``ManagerConfig``), or None.

    Returns:
        Through the proxy when the agent keeps tunnels to it and the manager knows its URL:
        ``proxy-url`` the proxy's with the member's name as its user (``http://NAME@PROXY``),
        ``server`` ``https://`` the name the agent says the member's certificate holds
        (``tlsServerName``), and the member's CA: TLS runs end to end and every client
        verifies the host of ``server``, so consumers that leave ``tls-server-name`` out
        (the upstream ``pkg/access``) verify the same name (``docs/cluster-proxy.md``, "The
        profile"). Without a ``tlsServerName``: ``server`` ``https://NAME`` (the CONNECT
        target names the member). Else the server, CA and proxy the agent advertises; None
        when it advertises no good server (no access provider then).
    """
    if fields is None:
        return None
    if fields.cluster_proxy and cluster_proxy_url:
        if not fields.tls_server_name:
            return kube.ClusterConnection(
                server=member_server(name),
                ca_data=fields.ca_data,
                proxy_url=cluster_proxy_url,
                name=name,
            )
        host = fields.tls_server_name
        return kube.ClusterConnection(
            server=f"https://[{host}]" if ":" in host else f"https://{host}",
            ca_data=fields.ca_data,
            proxy_url=member_proxy_url(cluster_proxy_url, name),
            name=name,
        )
    if not fields.server:
        return None
    return kube.ClusterConnection(
        server=fields.server, ca_data=fields.ca_data, proxy_url=fields.proxy_url, name=name
    )


class AgentMember:
    """An agent member in the member pool: the interface of a member connection, no connection.

    Args:
        key: Its pool key.
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
        key: AgentMemberKey,
        *,
        config: ManagerConfig,
        on_change: Callable[[], None],
        reports: AgentReports,
        now: Callable[[], dt.datetime],
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self.key = key
        self.config = config
        self.name = key.name
        self.on_change = on_change
        self.now = now
        self._reports = reports
        self._metrics = ManagerMetrics.for_registry(registry)
        self.observation = Observation()
        #: What the agent advertises to consumers (server, CA, proxy), once reported.
        self.advertised: kube.ClusterConnection | None = None
        self.observed = self.closed = False
        self._bounds = config.report_bounds
        #: The last check of the report, and the (uid, resourceVersion) it checked: a Lease
        #: event reconciles the member too, and an unchanged report is not checked again.
        self.checked: CheckedReport | None = None
        self._checked_version: tuple[Any, Any] | None = None
        #: Each field's last good value (for that member, that field).
        self._good: ReportFields | None = None

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
        checked = self._check(self._reports.report(self.name))
        stale, fresh_for = self._reports.heartbeat(self.name)
        fields = checked.fields if checked is not None else None
        before, self.advertised = (
            self.advertised,
            advertised_connection(self.name, fields, self.config.cluster_proxy_url),
        )
        # A new server, CA or proxy alone changes the profiles' access provider too.
        moved = self.advertised != before
        self._set(agent_observation(self.name, checked, stale), moved=moved)
        return fresh_for

    def _check(self, report: Mapping[str, Any] | None) -> CheckedReport | None:
        """The report's fields as they may be copied (each checked; the last good kept)."""
        status = objects.status(report or {})
        if not status:  # not reported yet (its last good values stay for the next report)
            self.checked = self._checked_version = None
            return None
        meta = objects.meta(report or {})
        version = (meta.get("uid"), meta.get("resourceVersion"))
        if self.checked is None or version != self._checked_version or version == (None, None):
            before = self.checked.problems if self.checked is not None else ()
            self.checked = check_report(status, self._good, self._bounds, self.now())
            self._good = self.checked.fields
            self._checked_version = version
            if self.checked.problems != before:
                self._said(self.checked)
        return self.checked

    def _said(self, checked: CheckedReport) -> None:
        """Log once per change which reported fields are refused, or that none is now."""
        if checked.problems:
            _log.warning(
                "the agent's report has fields that are not copied: %s",
                checked.condition().message,
                extra={"cluster": self.label},
            )
        else:
            _log.info("every field of the agent's report is copied", extra={"cluster": self.label})

    def _set(self, updated: Observation, *, moved: bool = False) -> None:
        first = not self.observed
        self.observed = True
        if updated == self.observation and not first and not moved:
            return
        before, self.observation = self.observation, updated
        if before.healthy.status != updated.healthy.status:
            self._metrics.health_transitions.labels(updated.healthy.status, self.name).inc()
        if (before.healthy.status, before.healthy.reason) != (
            updated.healthy.status,
            updated.healthy.reason,
        ):
            _log.info(
                "member %s healthy is %s: %s",
                self.name,
                updated.healthy.status,
                updated.healthy.reason,
                extra={"cluster": self.name, "detail": updated.healthy.message[:200]},
            )
        self.on_change()
