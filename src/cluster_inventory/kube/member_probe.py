"""The one probe of a member cluster: which requests, how often, what each answer says.

The cluster manager probes each member from the hub side (``docs/scale.md``); a pull-mode
member's agent probes its own API server from inside (``docs/agent.md``, "Reporting"). Both
send the same sequence through :func:`probe_member`:

1. ``GET /readyz?verbose`` at every probe: the health (:mod:`.probes` reads the answer);
2. ``GET /version`` on (re)connect and every :data:`VERSION_EVERY` probes after (a version
   changes only with an upgrade): :class:`ProbeCadence` keeps the count;
3. ``GET /api/v1/namespaces/kube-system`` on (re)connect only: its UID is the member id,
   which never changes, and a good answer proves the credential is accepted.

A member that is not healthy is probed again sooner: :data:`FIRST_REPROBE` seconds, doubling
up to the probe interval (:meth:`ProbeCadence.next_wait`), so a recovery shows in seconds.
The :class:`ProbeReading` is the one result: each caller folds it into what it keeps (the
manager's ``Observation``, with ``Joined`` and its own busy verdicts; the agent's
``MemberView``), since what a failed ``/version`` means differs between them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.kube.backoff import Backoff
from cluster_inventory.kube.errors import KubeError
from cluster_inventory.kube.probes import ConditionState, probe_failure, readyz_condition

__all__ = [
    "FIRST_REPROBE",
    "VERSION_EVERY",
    "ProbeCadence",
    "ProbeReading",
    "probe_member",
]

#: A healthy member's ``/version`` is read again every this many probes.
VERSION_EVERY = 10
#: Seconds before re-probing a member that is not healthy (doubling up to the interval).
FIRST_REPROBE = 1.0
#: The reprobe delays of a member not healthy: FIRST_REPROBE doubling (the probe interval
#: caps them at each call).
_REPROBE = Backoff(first=FIRST_REPROBE, cap=86400.0)


@dataclass(frozen=True, kw_only=True)
class ProbeReading:
    """What one probe of a member found.

    Attributes:
        health: ``ControlPlaneHealthy`` from ``/readyz`` (or from its request's failure).
        readyz_error: Why ``/readyz`` got no answer (None: it answered, whatever its status);
            nothing else was asked then.
        version_read: ``/version`` was asked this time.
        version: Its ``gitVersion`` (None: not asked, failed, or empty).
        version_error: Why ``/version`` failed, if asked and it did.
        identity_read: ``kube-system`` was asked this time.
        member_id: Its UID (None: not asked, failed, or empty).
        identity_error: Why reading ``kube-system`` failed, if asked and it did.
    """

    health: ConditionState
    readyz_error: KubeError | None = None
    version_read: bool = False
    version: str | None = None
    version_error: KubeError | None = None
    identity_read: bool = False
    member_id: str | None = None
    identity_error: KubeError | None = None


class ProbeCadence:
    """When the next probe is due and whether it reads ``/version``; one per member.

    Attributes:
        since_version: Probes since ``/version`` was last read.
    """

    def __init__(self) -> None:
        self.since_version = 0
        self._unhealthy = 0

    def reads_version(self, reconnect: bool) -> bool:
        """Count a probe that got an answer; True if it reads ``/version`` too.

        Args:
            reconnect: The member is (re)connecting: its version is read whatever the count.
        """
        self.since_version += 1
        if reconnect or self.since_version >= VERSION_EVERY:
            self.since_version = 0
            return True
        return False

    @property
    def version_due_next(self) -> bool:
        """True if the next answered probe reads ``/version`` (so it may not be skipped)."""
        return self.since_version + 1 >= VERSION_EVERY

    def next_wait(self, interval: float, *, soon: bool) -> float:
        """Seconds until the next probe.

        Args:
            interval: The probe interval (seconds).
            soon: The member is not healthy (or its last probe got no verdict): the wait is
                :data:`FIRST_REPROBE`, doubling at each call up to ``interval``; a call
                with ``soon=False`` starts the doubling over.
        """
        if not soon:
            self._unhealthy = 0
            return interval
        self._unhealthy += 1
        return min(interval, _REPROBE.delay(self._unhealthy))


async def probe_member(
    client: kube.ApiClient,
    *,
    timeout: float,
    reconnect: bool,
    cadence: ProbeCadence,
    credential: str = "the registration credential",
) -> ProbeReading:
    """Probe a member once (the sequence of this module's docstring); never raises for it.

    Args:
        client: The member's client.
        timeout: Seconds each request may take.
        reconnect: The member is (re)connecting: ``/version`` and ``kube-system`` are read.
        cadence: The member's cadence (counts the probes between two ``/version`` reads).
        credential: Whose credential a 401 refused, as the health message names it
            (:func:`~cluster_inventory.kube.probes.probe_failure`).

    Returns:
        The reading; a request that failed is in its ``*_error`` field.
    """
    try:
        status, body = await kube.get_text(client, "/readyz?verbose", timeout=timeout)
    except KubeError as exc:
        return ProbeReading(health=probe_failure(exc, credential=credential), readyz_error=exc)
    version = member_id = None
    version_error = identity_error = None
    version_read = cadence.reads_version(reconnect)
    if version_read:
        try:
            answer = await kube.request(
                client, "GET", "/version", timeout=timeout, target="/version"
            )
        except KubeError as exc:
            version_error = exc
        else:
            version = answer.get("gitVersion") or None
    if reconnect:
        try:
            ns = await kube.get(client, kube.NAMESPACES, "kube-system")
        except KubeError as exc:
            identity_error = exc
        else:
            member_id = objects.meta(ns).get("uid") or None
    return ProbeReading(
        health=readyz_condition(status, body),
        version_read=version_read,
        version=version,
        version_error=version_error,
        identity_read=reconnect,
        member_id=member_id,
        identity_error=identity_error,
    )
