"""One member cluster as the manager reaches it: probes, property watch, consumer tokens.

A :class:`MemberConnection` is shared by every registration with the same connection
details (server, CA, credential), so a fleet of registrations pointing at a few real
clusters costs a few probes and watches, not one per registration. It:

- probes ``/readyz?verbose``, ``/version`` and the ``kube-system`` namespace every
  ``probe_interval`` seconds (KEP-4322 status; the namespace UID is the member id);
- watches the member's ClusterProperty objects (a watch, not a poll) and records when each
  value was observed;
- keeps, per inventory namespace, a ServiceAccount in the manager's namespace on the member
  bound to the ClusterRole that inventory asks for, and mints its tokens with TokenRequest,
  minting again once ``rotation_fraction`` of the lifetime has passed.

Changes are reported through ``on_change``; nothing here writes to the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.names import FIELD_MANAGER, LABEL_INVENTORY
from cluster_inventory.manager.status import (
    ConditionState,
    Observation,
    ObservedProperty,
    probe_failure,
    readyz_condition,
)

__all__ = [
    "MemberConnection",
    "add_members",
    "connection_key",
    "service_account_name",
    "start_member",
]

_log = logging.getLogger("cluster_inventory.manager")


def connection_key(conn: kube.ClusterConnection) -> kube.ClusterConnection:
    """The identity of a connection: everything but its display name and namespace."""
    return dataclasses.replace(conn, name="", namespace=None)


def service_account_name(inventory_namespace: str, manager: str) -> str:
    """Member ServiceAccount serving one hub inventory namespace (a DNS label, <= 63)."""
    name = f"{manager}-{inventory_namespace}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[:52].rstrip('-')}-{digest}"


#: Seconds before the first re-probe of a member that is not healthy (doubling).
_FIRST_RETRY = 1.0
#: First probes in flight at once when many members start together (a cold start of a
#: replica with thousands of members must not time its own probes out).
FIRST_PROBES_IN_FLIGHT = 64

# Probe failures that are about the registration credential, so about ``Joined``.
_CREDENTIAL_REASONS = frozenset({"Unauthorized", "Forbidden", "CertificateInvalid"})


def _busy(exc: kube.KubeError) -> bool:
    """True if a request got no answer in time, or 429 (the server is up but overloaded)."""
    if not isinstance(exc, kube.ServerUnavailableError):
        return False
    return exc.status == 429 or "unreachable: TimeoutError" in str(exc)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class MemberConnection:
    """Probes, property watch and token minting for one member connection.

    Args:
        connection: How to reach the member (the registration credential).
        config: The manager's settings: its name (prefix of ServiceAccount names and value
            of their labels), ``member_namespace`` (where consumer ServiceAccounts live on
            the member), ``probe_interval`` and ``probe_timeout`` (seconds).
        on_change: Called (no arguments) when the observation changes.
        now: Wall clock (token rotation).
    """

    def __init__(
        self,
        connection: kube.ClusterConnection,
        *,
        config: ManagerConfig,
        on_change: Callable[[], None],
        now: Callable[[], dt.datetime] = _utcnow,
    ) -> None:
        self.connection = connection
        self.config = config
        self.on_change = on_change
        self.now = now
        self.observation = Observation()
        self._client: kube.ApiClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._informer: Informer | None = None
        self._observed: dict[str, ObservedProperty] = {}
        #: (inventory, role) -> (token, when it was minted by our clock)
        self._tokens: dict[tuple[str, str], tuple[kube.ServiceAccountToken, dt.datetime]] = {}
        self._token_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.probes = 0
        self._probed = asyncio.Event()
        self._timeouts = 0

    @property
    def label(self) -> str:
        """The member's server, for logs."""
        return self.connection.server

    async def start(self, *, probe_first: bool = True) -> None:
        """Build the client and start probing and watching.

        Args:
            probe_first: Probe once before returning (see :meth:`probe_safely`).

        Raises:
            KubeConfigError: The registration's TLS material does not load.
        """
        self._client = await kube.new_client(self.connection)
        if probe_first:
            await self.probe_safely()
        loop = asyncio.get_running_loop()
        self._informer = Informer(
            self._client, kube.CLUSTER_PROPERTIES, name=f"{self.label} ClusterProperty"
        )
        self._informer.add_handler(self._on_property)
        self._informer.start()
        self._tasks = [
            loop.create_task(self._probe_loop(), name=f"probe {self.label}"),
            loop.create_task(self._properties_synced(), name=f"properties {self.label}"),
        ]

    async def properties_listed(self, timeout: float) -> None:
        """Wait until the ClusterProperty watch has listed once, or ``timeout`` seconds.

        Never raises: a list that fails or takes longer is retried by the watch itself.
        """
        if self._informer is None:
            return
        with contextlib.suppress(kube.KubeError, TimeoutError):
            await asyncio.wait_for(self._informer.wait_synced(), timeout)

    @property
    def observed(self) -> bool:
        """True once the member was probed once, or found not to be contactable."""
        return self._probed.is_set()

    def fail(self, reason: str, message: str) -> None:
        """Record that the member cannot even be contacted (e.g. its TLS material is bad)."""
        state = ConditionState("False", reason, message)
        self._set(healthy=state, joined=state, properties=None, properties_error=message)
        self._probed.set()

    async def stop(self) -> None:
        """Stop probes and the watch, close the client."""
        await kube.cancel_and_wait(*self._tasks)
        if self._informer is not None:
            await self._informer.stop()
        if self._client is not None:
            await self._client.close()

    def _set(self, **changes: Any) -> None:
        updated = dataclasses.replace(self.observation, **changes)
        if updated == self.observation:
            return
        before = self.observation
        self.observation = updated
        for name in ("healthy", "joined"):
            old, new = getattr(before, name), getattr(updated, name)
            if (old.status, old.reason) != (new.status, new.reason):
                _log.info(
                    "member %s is %s: %s",
                    name,
                    new.status,
                    new.reason,
                    extra={"cluster": self.label, "detail": new.message[:200]},
                )
        self.on_change()

    # -- properties ------------------------------------------------------------------
    def _on_property(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = str(objects.meta(obj).get("name"))
        if event == "DELETED":
            self._observed.pop(name, None)
        else:
            value = str(objects.spec(obj).get("value", ""))
            known = self._observed.get(name)
            if known is None or known.value != value:
                self._observed[name] = ObservedProperty(name, value, self.now())
        if self._informer is not None and self._informer.has_synced:
            self._set(properties=tuple(self._observed.values()), properties_error=None)

    async def _properties_synced(self) -> None:
        assert self._informer is not None
        try:
            await self._informer.wait_synced()
        except kube.KubeAPIError as exc:
            self._set(properties=(), properties_error=f"cannot list ClusterProperty: {exc}")
            return
        self._set(properties=tuple(self._observed.values()), properties_error=None)

    # -- probes ----------------------------------------------------------------------
    async def probe(self) -> None:
        """Probe once and update the observation.

        ``/readyz?verbose`` decides ``ControlPlaneHealthy``: a draining API server fails it
        (``[-]shutdown``) while it still answers, and its body names the failing checks.
        ``/version`` then refreshes the version; if it fails while readyz passed, that failure
        is the verdict. The ``kube-system`` namespace read decides ``Joined`` and the member
        id; only an answer about the credential (401, 403, TLS) turns ``Joined`` False, since
        an unavailable server says nothing about it. With no HTTP answer at all, only
        ``ControlPlaneHealthy`` changes, and the last good version is kept.
        """
        assert self._client is not None
        self.probes += 1
        client, timeout = self._client, self.config.probe_timeout
        try:
            status, body = await kube.get_text(client, "/readyz?verbose", timeout=timeout)
        except kube.KubeError as exc:
            if _busy(exc) and not self._timeouts and self.observation.healthy.status == "True":
                # One probe without an answer in time, or answered 429, is no verdict on a
                # healthy member (a busy replica or member, thousands of probes): probe
                # again in 1 s first.
                self._timeouts = 1
                return
            state = probe_failure(exc)
            joined = state if state.reason in _CREDENTIAL_REASONS else None
            self._set(healthy=state, **({"joined": joined} if joined else {}))
            return
        self._timeouts = 0
        healthy = readyz_condition(status, body)
        changes: dict[str, Any] = {"healthy": healthy}
        try:
            version = await kube.request(
                client, "GET", "/version", timeout=timeout, target="/version"
            )
        except kube.KubeError as exc:
            if healthy.status == "True":
                changes["healthy"] = probe_failure(exc)
        else:
            changes["version"] = version.get("gitVersion")
        try:
            ns = await kube.get(client, kube.NAMESPACES, "kube-system")
        except kube.KubeError as exc:
            state = probe_failure(exc)
            if state.reason in _CREDENTIAL_REASONS:
                changes["joined"] = state
        else:
            changes["joined"] = ConditionState(
                "True", "CredentialAccepted", "the registration credential works"
            )
            changes["member_id"] = objects.meta(ns).get("uid")
        self._set(**changes)

    async def probe_safely(self) -> None:
        """Probe once; an unexpected error is logged, not raised (each step of the probe loop)."""
        try:
            await self.probe()
        except Exception:  # an odd answer is logged; the probe loop carries on
            _log.exception("probe failed", extra={"cluster": self.label})
        finally:
            self._probed.set()

    async def _probe_loop(self) -> None:
        # The caller runs probe_safely(); this loop keeps the cadence from there. A member
        # that is not healthy is probed again sooner (1 s, doubling up to probe_interval), so
        # one probe that timed out (a start-up storm, a blip) does not leave its profiles
        # unhealthy for a whole interval when the interval is long (thousands of members).
        # The cadence starts from the first probe, which start_members runs (bounded).
        await self._probed.wait()
        started = time.monotonic()
        if self.observation.healthy.status == "True":
            # A random phase: members started together (thousands in a cold start, probed
            # within a second or two) would otherwise probe together at every interval, a
            # burst of N probes instead of N / interval per second (docs/scale.md).
            started -= self.config.probe_interval * random.random()  # noqa: S311 - not a secret
        retry = _FIRST_RETRY
        while True:
            interval = self.config.probe_interval
            if self._timeouts or self.observation.healthy.status != "True":
                interval, retry = min(interval, retry), min(retry * 2, interval)
            else:
                retry = _FIRST_RETRY
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
            started = time.monotonic()
            await self.probe_safely()

    # -- consumer tokens -------------------------------------------------------------
    def rotation_due(self, inventory: str, role: str, fraction: float) -> dt.datetime | None:
        """When the token for (inventory, role) should be minted again, or None if none yet."""
        entry = self._tokens.get((inventory, role))
        if entry is None:
            return None
        token, issued = entry
        return issued + (token.expiration - issued) * fraction

    async def token_for(
        self, inventory: str, role: str, *, lifetime: float, fraction: float
    ) -> kube.ServiceAccountToken:
        """A token of the ServiceAccount serving ``inventory``, minted or reused.

        The account and its ClusterRoleBinding to ``role`` are ensured on the member first.

        Raises:
            KubeAPIError: The member refused (the registration credential lacks RBAC).
        """
        assert self._client is not None
        key = (inventory, role)
        lock = self._token_locks.setdefault(key, asyncio.Lock())
        async with lock:
            due = self.rotation_due(inventory, role, fraction)
            if due is not None and self.now() < due:
                return self._tokens[key][0]
            sa = service_account_name(inventory, self.config.name)
            await self._ensure_account(sa, inventory, role)
            minted = await kube.request_service_account_token(
                self._client, self.config.member_namespace, sa, expiration_seconds=int(lifetime)
            )
            self._tokens[key] = (minted, self.now())
            return minted

    async def _ensure_account(self, sa: str, inventory: str, role: str) -> None:
        assert self._client is not None
        client, ns = self._client, self.config.member_namespace
        labels = {LABEL_INVENTORY: inventory, "app.kubernetes.io/managed-by": self.config.name}
        try:
            await kube.create(client, kube.NAMESPACES, {"metadata": {"name": ns}})
        except kube.AlreadyExistsError:
            pass
        await kube.apply(
            client,
            kube.SERVICE_ACCOUNTS,
            {"metadata": {"name": sa, "namespace": ns, "labels": labels}},
            field_manager=FIELD_MANAGER,
        )
        await kube.apply(
            client,
            kube.CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": f"{sa}:{role}", "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
            },
            field_manager=FIELD_MANAGER,
        )
        # A changed role must not leave the old binding (and its rights) behind.
        bindings = await kube.list_objects(
            client, kube.CLUSTER_ROLE_BINDINGS, label_selector=f"{LABEL_INVENTORY}={inventory}"
        )
        for binding in bindings.get("items") or ():
            name = str(objects.meta(binding).get("name"))
            if name.startswith(f"{sa}:") and name != f"{sa}:{role}":
                await kube.delete(client, kube.CLUSTER_ROLE_BINDINGS, name)

    async def forget_inventory(self, inventory: str) -> None:
        """Delete the ServiceAccount and bindings serving ``inventory`` (its tokens die too)."""
        if self._client is None:
            return
        for key in [k for k in self._tokens if k[0] == inventory]:
            self._tokens.pop(key, None)
        sa = service_account_name(inventory, self.config.name)
        try:
            bindings = await kube.list_objects(
                self._client,
                kube.CLUSTER_ROLE_BINDINGS,
                label_selector=f"{LABEL_INVENTORY}={inventory}",
            )
            for binding in bindings.get("items") or ():
                name = str(objects.meta(binding).get("name"))
                # Another cluster manager serving the same inventory on this member has its
                # own ServiceAccount and bindings: only ours (named after our account) go.
                if name.startswith(f"{sa}:"):
                    await kube.delete(self._client, kube.CLUSTER_ROLE_BINDINGS, name)
            await kube.delete(
                self._client, kube.SERVICE_ACCOUNTS, sa, namespace=self.config.member_namespace
            )
        except kube.KubeError as exc:
            _log.warning(
                "could not remove %s on member: %s", sa, exc, extra={"cluster": self.label}
            )


def add_members(
    members: dict[kube.ClusterConnection, MemberConnection],
    conns: set[kube.ClusterConnection],
    not_ready: Mapping[kube.ClusterConnection, tuple[str, str]],
    *,
    config: ManagerConfig,
    on_change: Callable[[kube.ClusterConnection], None],
    now: Callable[[], dt.datetime] = _utcnow,
) -> list[MemberConnection]:
    """Add a connection for each of ``conns`` to ``members``; return those to start.

    A member its source calls not ready (``not_ready``: reason, message) is never
    contacted: its connection only records why (also for one already known).

    Args:
        members: The cluster manager's connections by connection key (updated in place).
        conns: Connection keys to add.
        not_ready: Connection key -> (reason, message) of members not to contact.
        config: The manager's settings.
        on_change: Called with the connection key when its observation changes.
        now: Wall clock (token rotation).
    """
    for conn, (reason, message) in not_ready.items():
        if conn in members:
            members[conn].fail(reason, message)
    starting: list[MemberConnection] = []
    for conn in conns:
        member = MemberConnection(
            conn, config=config, on_change=functools.partial(on_change, conn), now=now
        )
        members[conn] = member
        if conn in not_ready:
            member.fail(*not_ready[conn])
        else:
            starting.append(member)
    return starting


async def start_member(member: MemberConnection) -> None:
    """Start ``member``; return once its first probe answered and its properties were listed.

    The ClusterProperty list is waited for at most ``probe_timeout`` seconds. Never raises:
    TLS material that does not load is recorded on the member (its profiles say so).

    The cluster manager runs at most ``FIRST_PROBES_IN_FLIGHT`` of these at once: a replica
    taking thousands of members (a cold start, a dead peer's share) paces its probes and
    LISTs instead of sending all of them at once, which timed its own probes out and drew
    429s from the members (``docs/scale.md``).
    """
    try:
        await member.start(probe_first=True)
    except kube.KubeError as exc:
        _log.warning("cannot start member connection: %s", exc, extra={"cluster": member.label})
        member.fail("RegistrationInvalid", f"the registration kubeconfig does not load: {exc}")
        return
    await member.properties_listed(member.config.probe_timeout)
