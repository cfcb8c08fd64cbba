"""The agent's reporter: watches its member from inside and keeps its MemberReport current.

OCM's klusterlet status controller in this project's terms (``docs/agent.md``,
"Reporting"). On the member it

- watches the ClusterProperty objects (an :class:`~cluster_inventory.kube.informer.Informer`,
  so a change is an event, not a poll);
- probes its own API server with the cluster manager's probe
  (:mod:`cluster_inventory.kube.member_probe`: the same requests, cadence and reading, so one
  failure has one reason and message wherever it shows): ``/readyz?verbose`` every
  ``probe_interval`` seconds, the ``kube-system`` UID (the member id) and ``/version`` when it
  (re)connects (first probe, and the first good probe after a failed one), and the version
  again every :data:`VERSION_EVERY` probes; an unhealthy member is probed again after 1 s,
  doubling up to the interval, and the member is probed at once when the property watch
  breaks or mends (evidence that its API server went away or came back).

On the hub it replaces the report's whole ``status`` (field manager ``cluster-inventory-agent``,
:func:`~cluster_inventory.kube.replace_status`: the agent owns every field of it, and a field
another writer added is gone at its next write) only when the content differs from what it
last wrote (:func:`~cluster_inventory.agent.report.same_report`). Changes arriving together
are written together, :data:`COALESCE` seconds after the first. While the hub does not answer, the
latest state is kept and written once it answers (retried with backoff up to
:data:`MAX_BACKOFF` seconds, said once when it starts failing and once when it recovers):
a state that came and went during the outage is not replayed, the state of the moment is.
A refused write (403 or 404) is retried the same way until the agent's
:class:`~.rejection.RejectionCheck` holds the refusals proven (``docs/agent.md``,
"Transient or rejected").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any

from cluster_inventory import __version__, kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.rejection import RejectionCheck, not_accepted
from cluster_inventory.agent.report import (
    MemberView,
    ObservedValue,
    keep_observed_times,
    report_status,
    same_report,
)
from cluster_inventory.api import objects
from cluster_inventory.api.about import observe_property
from cluster_inventory.api.constants import FIELD_MANAGER_AGENT
from cluster_inventory.kube.informer import Informer, strip_managed_fields
from cluster_inventory.kube.member_probe import VERSION_EVERY, ProbeCadence, probe_member

__all__ = ["COALESCE", "DEFAULT_PROBE_INTERVAL", "MAX_BACKOFF", "VERSION_EVERY", "MemberReporter"]

_log = logging.getLogger("cluster_inventory.agent")

#: Seconds between two probes of the member's ``/readyz`` by default.
DEFAULT_PROBE_INTERVAL = 30.0
#: Seconds from a change to its write: changes within it (a burst) become one write.
COALESCE = 0.2
#: Longest wait (seconds) between two tries to write while the hub does not answer.
MAX_BACKOFF = 10.0
#: Whose credential a 401 from the member refused, in ``apiServerHealth.message``.
MEMBER_CREDENTIAL = "the agent's credential on its member"
_FIRST_BACKOFF = 0.5


class MemberReporter:
    """Keeps the MemberReport ``namespace/name`` on the hub current for one member.

    Args:
        hub: Client of the hub (the agent's identity there).
        member: Client of the member the agent runs in.
        name: The member's name (the MemberReport's name).
        namespace: The cluster manager's hub namespace.
        access: What the member advertises to consumers
            (:func:`~cluster_inventory.agent.report.advertised`).
        probe_interval: Seconds between ``/readyz`` probes.
        probe_timeout: Seconds a probe (and the first ClusterProperty list) may take.
        agent_version: Written as ``status.agentVersion``.
        now: Wall clock (probe and observation times).
        rejection: Judges refused writes (shared with the heartbeat; None: one of its own
            with a window of :data:`MAX_BACKOFF` x 3 seconds).

    Raises:
        ValueError: ``probe_interval`` or ``probe_timeout`` is not positive.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        member: kube.ApiClient,
        *,
        name: str,
        namespace: str,
        access: Mapping[str, Any] | None = None,
        probe_interval: float = DEFAULT_PROBE_INTERVAL,
        probe_timeout: float = 10.0,
        agent_version: str = __version__,
        now: Callable[[], dt.datetime] = utcnow,
        rejection: RejectionCheck | None = None,
    ) -> None:
        for field, value in (("probe_interval", probe_interval), ("probe_timeout", probe_timeout)):
            if not value > 0:
                raise ValueError(
                    f"reporter {namespace}/{name}: {field} {value:g} s is not positive"
                )
        self.hub = hub
        self.member = member
        self.name = name
        self.namespace = namespace
        self.access = dict(access or {})
        self.probe_interval = probe_interval
        self.probe_timeout = probe_timeout
        self.agent_version = agent_version
        self._now = now
        self.rejection = rejection or RejectionCheck(3 * MAX_BACKOFF)
        self.view = MemberView()
        self._written: dict[str, Any] | None = None
        self._observed: dict[str, ObservedValue] = {}
        self._informer: Informer | None = None
        self._tasks = kube.TaskSet(f"reporter {self.key}", logger=_log, extra={"object": self.key})
        self._listed: asyncio.Task[None] | None = None
        self._dirty = asyncio.Event()
        self._wake = asyncio.Event()  # the property watch broke or mended: probe now
        self._cadence = ProbeCadence()
        self._started = False
        #: Probes sent, report writes the hub took, writes it did not take.
        self.probes = self.writes = self.write_failures = 0

    @property
    def key(self) -> str:
        """``namespace/name`` of the MemberReport, for logs and errors."""
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> bool:
        """True while a change waits to be written (or to be found no change)."""
        return self._dirty.is_set()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Read the report on the hub, list the member's properties, probe, start the loops.

        The ClusterProperty list is waited for at most ``probe_timeout`` seconds: a member
        whose API server does not answer is still reported (unhealthy) meanwhile.

        Raises:
            MemberNotAcceptedError: The hub refused to let the agent read its MemberReport
                (one refusal, not judged: :class:`~cluster_inventory.agent.ReportingAgent`
                judges it as any other); nothing was started.
        """
        if self._started:
            return
        current: dict[str, Any] | None = None
        try:
            current = await kube.get(self.hub, kube.MEMBER_REPORTS, self.name, self.namespace)
        except kube.KubeAPIError as exc:
            refused = not_accepted(exc, self.name, self.namespace, "MemberReport")
            if refused is not None:
                raise refused from None
            _log.warning("cannot read MemberReport %s yet: %s", self.key, exc)
        except kube.KubeError as exc:
            _log.warning("cannot read MemberReport %s yet: %s", self.key, exc)
        if current is not None:
            self._written = dict(objects.status(current)) or None
        self._informer = Informer(
            self.member,
            kube.CLUSTER_PROPERTIES,
            name=f"member {self.name} ClusterProperty",
            transform=strip_managed_fields,
        )
        self._informer.add_handler(self._on_property)
        self._informer.add_health_handler(self._wake.set)
        self._informer.start()
        # run() gathers them: a rejection raised by the write loop is run()'s to raise.
        self._listed = listed = self._tasks.spawn(
            self._properties_synced(), name="properties", awaited=True
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(listed), self.probe_timeout)
        await self.probe()
        self._tasks.spawn(self._probe_loop(), name="probe", awaited=True)
        self._tasks.spawn(self._write_loop(), name="write", awaited=True)
        self._dirty.set()
        self._started = True

    async def run(self) -> None:
        """Start if needed, then report until cancelled; stops on the way out.

        Raises:
            MemberNotAcceptedError: At start (see :meth:`start`), or once the refusals of
                its writes are proven (:class:`~.rejection.RejectionCheck`).
        """
        await self.start()
        assert self._listed is not None
        try:
            # The listing may have finished (and left the task set) already.
            await asyncio.gather(*{self._listed, *self._tasks})
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Stop the loops and the ClusterProperty watch (idempotent; the clients stay open)."""
        await self._tasks.stop()
        if self._informer is not None:
            await self._informer.stop()
        self._started = False

    # -- the member --------------------------------------------------------------------
    def _update(self, **changes: Any) -> None:
        before, after = self.view, dataclasses.replace(self.view, **changes)
        self.view = after
        old, new = before.health, after.health
        if (old.status, old.reason) != (new.status, new.reason):
            _log.info(
                "member API server health is %s: %s",
                new.status,
                new.reason,
                extra={"object": self.key, "detail": new.message[:200]},
            )
        if dataclasses.replace(before, probed=None) != dataclasses.replace(after, probed=None):
            self._dirty.set()

    def _on_property(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        observe_property(
            self._observed, event, obj, lambda _name, value: ObservedValue(value, self._now())
        )
        if self._informer is not None and self._informer.has_synced:
            self._update(properties=dict(self._observed))

    async def _properties_synced(self) -> None:
        assert self._informer is not None
        try:
            await self._informer.wait_synced()
        except kube.KubeAPIError as exc:
            _log.error(
                "cannot list ClusterProperty objects on the member (the report keeps the last "
                "ones): %s",
                exc,
                extra={"object": self.key},
            )
            return
        reported = (self._written or {}).get("properties")
        if isinstance(reported, list):
            self._observed = keep_observed_times(self._observed, reported)
        self._update(properties=dict(self._observed))

    async def probe(self) -> None:
        """Probe the member once: ``/readyz``, and on (re)connect its id and version.

        Never raises for the member's sake: a failed probe is a health reading.
        """
        self.probes += 1
        probed = self._now()
        view = self.view
        reconnect = view.member_id is None or view.version is None or view.health.status != "True"
        reading = await probe_member(
            self.member,
            timeout=self.probe_timeout,
            reconnect=reconnect,
            cadence=self._cadence,
            credential=MEMBER_CREDENTIAL,
        )
        changes: dict[str, Any] = {"health": reading.health, "probed": probed}
        # What was not read keeps its last value; the health stays /readyz's.
        for what, error in (
            ("/version", reading.version_error),
            ("kube-system namespace (its member id)", reading.identity_error),
        ):
            if error is not None:
                _log.warning(
                    "cannot read the member's %s: %s", what, error, extra={"object": self.key}
                )
        if reading.version_read and reading.version_error is None:
            changes["version"] = reading.version
        if reading.identity_read and reading.identity_error is None:
            changes["member_id"] = reading.member_id
        self._update(**changes)

    async def _probe_loop(self) -> None:
        # A member that is not healthy is probed again sooner (1 s, doubling up to the
        # interval), as the cluster manager does: its recovery shows in seconds, not after
        # a whole interval (30 s by default).
        while True:
            soon = self.view.health.status != "True"
            interval = self._cadence.next_wait(self.probe_interval, soon=soon)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), interval)
            self._wake.clear()
            try:
                await self.probe()
            except Exception:  # an odd answer is logged; the next probe carries on
                _log.exception("probe failed", extra={"object": self.key})

    # -- the hub -----------------------------------------------------------------------
    def desired(self) -> dict[str, Any]:
        """The status the reporter would write now."""
        return report_status(
            self.view, self.access, self.agent_version, self._written, member=self.key
        )

    async def flush(self) -> bool:
        """Write the report if its content changed since the last write; True if written.

        Raises:
            MemberNotAcceptedError: The MemberReport is absent or not the agent's to write.
            KubeError: The hub did not take the write (the caller retries).
        """
        desired = self.desired()
        if same_report(desired, self._written):
            return False
        try:
            # The whole status, replaced: a field another writer put in the report (with
            # another field manager) is gone at the agent's next write, and a restarted
            # agent, finding it on the hub, writes at once. An apply would leave it there.
            await kube.replace_status(
                self.hub,
                kube.MEMBER_REPORTS,
                self.name,
                self.namespace,
                desired,
                field_manager=FIELD_MANAGER_AGENT,
            )
        except kube.KubeAPIError as exc:
            refused = not_accepted(exc, self.name, self.namespace, "MemberReport")
            if refused is not None:
                raise refused from None
            raise
        self._written = desired
        self.writes += 1
        return True

    async def _write_loop(self) -> None:
        throttle = kube.Throttle(
            f"write MemberReport {self.key} (the latest report is kept)",
            logger=_log,
            backoff=kube.Backoff(first=_FIRST_BACKOFF, cap=MAX_BACKOFF),
            extra={"object": self.key},
        )
        while True:
            await self._dirty.wait()
            await asyncio.sleep(COALESCE)
            self._dirty.clear()
            try:
                wrote = await self.flush()
            except kube.InvalidError as exc:
                # Retrying the same content cannot help; the next change tries again.
                _log.error("the hub refused MemberReport %s: %s", self.key, exc)
                continue
            except kube.KubeError as exc:
                self.write_failures += 1
                note = await self.rejection.failure(self.hub, exc)
                self._dirty.set()
                await throttle.pause(exc, note=note)
                continue
            if wrote:  # an unchanged report sends nothing: no answer to count
                self.rejection.succeeded()
            throttle.succeeded()
