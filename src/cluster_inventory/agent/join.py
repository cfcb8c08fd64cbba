"""Joining the hub: ask for a client certificate with a CSR, wait for it, keep it fresh.

The member's half of the double opt-in (``docs/agent.md``, "Joining"), as kubelet's TLS
bootstrap and OCM klusterlet's registration agent do it: create a
``certificates.k8s.io/v1`` CertificateSigningRequest for signer
``kubernetes.io/kube-apiserver-client`` with the bootstrap identity (or, for a rotation, the
current one), watch that one CSR until the hub has approved and signed it, and store the
result. Nothing is polled: the wait is a watch with a field selector on the CSR's name.

The acceptance id the request names comes from the bootstrap certificate (its group
``cluster-inventory:bootstrap:NAME:ACC``), then from the agent's own; the CSR's name is the
acceptance's one name (:func:`~cluster_inventory.api.agents.agent_csr_name`), the only CSR
the hub lets either identity read, so the previous request of that name is replaced.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from cryptography import x509

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.heartbeat import HUB_KEEPALIVE_SECONDS
from cluster_inventory.agent.identity import (
    AgentIdentity,
    acceptance_of_certificate,
    certificate_request_pem,
    new_private_key,
    renewal_time,
)
from cluster_inventory.agent.state import IdentityStore
from cluster_inventory.api.agents import agent_csr_name, bootstrap_user, check_member_name
from cluster_inventory.api.constants import AGENT_CSR_USAGES, LABEL_AGENT
from cluster_inventory.kube import certificates
from cluster_inventory.kube.certificates import CertificateRequestError, wait_for_certificate

__all__ = [
    "DEFAULT_EXPIRATION_SECONDS",
    "HubIdentity",
    "JoinError",
    "bootstrap_acceptance",
    "bootstrap_expired",
    "certificate_signing_request",
    "ensure_identity",
    "join_hint",
    "keep_identity_fresh",
    "request_certificate",
]

#: ``spec.expirationSeconds`` the agent asks for by default: 24 h (the contract's default).
DEFAULT_EXPIRATION_SECONDS = 24 * 3600
#: Seconds between two tries of a failed rotation, at least (else a tenth of the life left).
_ROTATION_RETRY = 10.0
#: Seconds between two tries of a join the hub did not answer: the first, doubling to the last.
_JOIN_RETRY = (1.0, 30.0)
_log = logging.getLogger("cluster_inventory.agent")


class JoinError(CertificateRequestError):
    """The hub did not issue the agent's certificate.

    Attributes ``csr``, ``field`` and ``problem``, as
    :class:`~cluster_inventory.kube.certificates.CertificateRequestError`.
    """


def join_hint(
    error: kube.KubeError,
    bootstrap: kube.ClusterConnection | None = None,
    now: dt.datetime | None = None,
) -> str:
    """What a failed request of the join may mean, for its retry's log line.

    Args:
        error: The failure.
        bootstrap: The bootstrap connection: on a 401, its certificate's expiry is read
            here (the hub never says why it refuses a credential).
        now: The current time (default: now).
    """
    if isinstance(error, kube.UnauthorizedError):
        expired = bootstrap_expired(bootstrap, now or utcnow()) if bootstrap else None
        if expired is not None:
            return (
                f"the bootstrap certificate expired at {expired.isoformat()}: "
                "`cluster-inventory manager bootstrap-kubeconfig --member NAME` issues a new one"
            )
        return (
            "the hub does not take the credential (a hub still starting, or a client CA it "
            "no longer trusts)"
        )
    if isinstance(error, kube.ForbiddenError):
        return (
            "the identity may not ask for certificates (yet): `manager accept` grants the "
            "member's acceptance its one CSR; the hub may still be starting, or the member "
            "was rejected, or accepted again (a new bootstrap kubeconfig is needed then)"
        )
    return "transient: the hub did not answer"


def bootstrap_expired(bootstrap: kube.ClusterConnection, now: dt.datetime) -> dt.datetime | None:
    """When the bootstrap credential's client certificate expired, if it has.

    Args:
        bootstrap: The bootstrap connection.
        now: The current time (timezone-aware).

    Returns:
        Its ``notAfter`` if that is past; None while valid, or for a credential without a
        client certificate (a token's expiry is the hub's to tell).
    """
    if not bootstrap.client_cert_data:
        return None
    try:
        cert = x509.load_pem_x509_certificate(bootstrap.client_cert_data)
    except ValueError:
        return None  # the TLS context says what is wrong with it
    return cert.not_valid_after_utc if cert.not_valid_after_utc <= now else None


def bootstrap_acceptance(bootstrap: kube.ClusterConnection, name: str) -> str | None:
    """The acceptance id of member ``name`` the bootstrap credential was issued for, or None.

    Read from the bootstrap certificate's groups (``manager bootstrap-kubeconfig --member
    NAME`` puts the member's current acceptance there). None for a credential without a
    client certificate or one issued for another member.
    """
    if not bootstrap.client_cert_data:
        return None
    return acceptance_of_certificate(bootstrap.client_cert_data, name, bootstrap=True)


def certificate_signing_request(
    name: str,
    acceptance: str,
    request_pem: bytes,
    *,
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
) -> dict[str, Any]:
    """The CertificateSigningRequest object of member ``name``'s agent (``docs/agent.md``).

    Args:
        name: The member name (a DNS-1123 label).
        acceptance: The member's acceptance id: the CSR is named
            :func:`~cluster_inventory.api.agents.agent_csr_name` of it.
        request_pem: The PEM request (:func:`~.identity.certificate_request_pem`).
        expiration_seconds: ``spec.expirationSeconds`` (the API server's minimum is 600).

    Raises:
        AgentNameError: ``name`` is not a DNS-1123 label.
        ValueError: ``expiration_seconds`` is under 600 (the API's minimum).
    """
    check_member_name(name)
    return certificates.client_certificate_signing_request(
        request_pem,
        name=agent_csr_name(name, acceptance),
        labels={LABEL_AGENT: name},
        expiration_seconds=expiration_seconds,
        usages=AGENT_CSR_USAGES,
    )


async def request_certificate(
    hub: kube.ApiClient,
    name: str,
    acceptance: str,
    key_pem: bytes,
    *,
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    timeout: float | None = None,
    on_created: Callable[[str], None] | None = None,
) -> bytes:
    """Create the agent's CSR with ``hub``'s identity and wait until it is issued.

    The previous CSR of the same name (the acceptance's one name: an earlier request, or the
    one a crashed agent left) is deleted first.

    Args:
        hub: Hub client: the bootstrap identity, or the agent's own for a rotation.
        name: The member name.
        acceptance: The member's acceptance id (in the request's subject and the CSR's name).
        key_pem: The private key the certificate is for (stays here; only the request goes).
        expiration_seconds: ``spec.expirationSeconds``.
        timeout: Seconds to wait for the certificate (None: until it comes; a cluster
            manager that is not running yet approves it when it starts).
        on_created: Called with the CSR's name once it exists.

    Returns:
        The issued certificate, PEM.

    Raises:
        JoinError: The CSR was denied or failed (the hub's reason), was deleted, was not
            issued within ``timeout``, or the issued certificate is not for ``key_pem``.
        KubeAPIError: The CSR could not be created or watched (e.g. 403 to the identity).
    """
    body = certificate_signing_request(
        name,
        acceptance,
        certificate_request_pem(name, acceptance, key_pem),
        expiration_seconds=expiration_seconds,
    )
    try:
        return await wait_for_certificate(
            hub,
            body,
            key_pem,
            timeout=timeout,
            on_created=on_created,
            late_hint=" (is the cluster manager running, with its CSR approver?)",
            error=JoinError,
            replace=True,
        )
    except JoinError as exc:
        if exc.field == "metadata":  # the approver deletes what it refuses, with an Event
            raise JoinError(
                exc.csr,
                exc.field,
                f"{exc.problem}: the cluster manager refused it; its Warning Events on the "
                "CSR (namespace default) on the hub say why",
            ) from None
        raise


async def ensure_identity(
    bootstrap: kube.ClusterConnection,
    name: str,
    store: IdentityStore,
    *,
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    timeout: float | None = None,
    announce: bool = True,
) -> AgentIdentity:
    """The agent's identity: the stored one while fresh, else a new one from the hub.

    A stored identity that is due for rotation asks with itself (the hub approves that as a
    rotation); no usable stored identity asks with ``bootstrap``. A new key is made for every
    request, so a leaked old key dies with its certificate.

    Args:
        bootstrap: The bootstrap connection (server, CA and the bootstrap credential).
        name: The member name.
        store: The state directory.
        expiration_seconds: ``spec.expirationSeconds`` of a new CSR.
        timeout: See :func:`request_certificate`.
        announce: Log that the agent waits for the approval (once per join: a retry says
            nothing more).

    Raises:
        AgentNameError: ``name`` is not a DNS-1123 label.
        JoinError: See :func:`request_certificate`.
        KubeAPIError: See :func:`request_certificate`.
        StateDirError: The state directory cannot be created or written; found before a
            CSR is created.
    """
    check_member_name(name, source="agent", field="name")
    current = store.load(name)
    given = bootstrap_acceptance(bootstrap, name)
    if (
        current is not None
        and given is not None
        and current.acceptance != given
        and bootstrap_expired(bootstrap, store.now()) is None
    ):
        # The hub's admin accepted the member again and handed a new bootstrap credential:
        # the stored identity is of an earlier acceptance, which the hub no longer trusts.
        _log.info(
            "the bootstrap credential is for another acceptance of %s than the stored "
            "identity: joining again with it",
            name,
            extra={"object": name},
        )
        current = None
    held = current.acceptance if current is not None else None
    if current is not None and held is None:
        current = None  # issued before acceptances had ids: the hub trusts it no more
    if current is not None and store.now() < renewal_time(current.cert_pem):
        return current
    acceptance = held if current is not None else given
    if acceptance is None:
        raise JoinError(
            "bootstrap credential",
            "client-certificate-data",
            f"is not a bootstrap certificate of member {name} (its group "
            f"cluster-inventory:bootstrap:{name}:ACCEPTANCE): on the hub, "
            f"`cluster-inventory manager bootstrap-kubeconfig --member {name}` issues one",
        )
    if current is None and announce:
        _log.info(
            "no identity on the hub yet: asking for one with the bootstrap credential "
            "(%s); waiting for the hub to approve it",
            bootstrap_user(name),
            extra={"object": name},
        )
    store.prepare()  # before a CSR exists: an unwritable directory is found first
    conn = current.connection(bootstrap) if current is not None else bootstrap
    key_pem = new_private_key()
    async with await kube.new_client(conn) as hub:
        cert_pem = await request_certificate(
            hub,
            name,
            acceptance,
            key_pem,
            expiration_seconds=expiration_seconds,
            timeout=timeout,
        )
    identity = AgentIdentity(name=name, key_pem=key_pem, cert_pem=cert_pem)
    store.save(identity, bootstrap)
    _log.info(
        "joined the hub as %s (certificate valid until %s)",
        name,
        identity.not_after.isoformat(),
        extra={"object": name},
    )
    return identity


async def keep_identity_fresh(
    bootstrap: kube.ClusterConnection,
    name: str,
    store: IdentityStore,
    on_rotated: Callable[[AgentIdentity], None],
    *,
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Rotate the agent's certificate when due, for ever (a task; cancel it to stop).

    Sleeps until :func:`~.identity.renewal_time` of the current certificate (a timer, not a
    poll), then asks with the current identity. A failed rotation is retried after a tenth
    of the time left, at least 10 s; the old certificate stays in use meanwhile.

    Args:
        bootstrap: See :func:`ensure_identity`.
        name: The member name.
        store: The state directory.
        on_rotated: Called with each identity it did not start from (a first join, a
            rotation): rebuild the hub client with it.
        expiration_seconds: See :func:`ensure_identity`.
        sleep: Injectable ``asyncio.sleep``.

    Raises:
        JoinError: There is no stored identity and the first join failed.
        KubeAPIError: Likewise.
    """
    current = store.load(name)
    throttle = kube.Throttle(
        f"rotate the certificate of member {name} (the current one stays in use)",
        logger=_log,
        backoff=kube.Backoff(first=_ROTATION_RETRY, cap=_ROTATION_RETRY),
        extra={"object": name},
        sleep=sleep,
    )
    while True:
        try:
            fresh = await ensure_identity(
                bootstrap, name, store, expiration_seconds=expiration_seconds
            )
        except (JoinError, kube.KubeError) as exc:
            if current is None:
                raise  # nothing to keep using: the caller decides
            left = (current.not_after - store.now()) / dt.timedelta(seconds=1)
            await throttle.pause(exc, delay=max(left / 10, _ROTATION_RETRY))
            continue
        throttle.succeeded()
        if current is None or fresh.cert_pem != current.cert_pem:
            on_rotated(fresh)
        current = fresh
        await sleep(max((renewal_time(current.cert_pem) - store.now()).total_seconds(), 0.0))


class HubIdentity:
    """The hub identity of an agent that joins by itself, for its hub clients.

    :meth:`join` gets the identity (:func:`ensure_identity`: reused from the state directory,
    or asked for with the bootstrap credential, waiting until the cluster manager approves it);
    :meth:`keep_fresh` rotates it (:func:`keep_identity_fresh`). Every hub client made by
    :meth:`client` (and its clones) shares one :class:`~cluster_inventory.kube.ReloadableTLSContext`
    that takes each new certificate, so a rotation needs no new client: connections opened
    after it present the new certificate.

    Args:
        bootstrap: The bootstrap connection (server, CA and the bootstrap credential).
        name: The member name.
        store: The state directory.
        expiration_seconds: ``spec.expirationSeconds`` of a new CSR.
    """

    def __init__(
        self,
        bootstrap: kube.ClusterConnection,
        name: str,
        store: IdentityStore,
        *,
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    ) -> None:
        self.bootstrap = bootstrap
        self.name = name
        self.store = store
        self.expiration_seconds = expiration_seconds
        #: The hub without the bootstrap credential: the identity's certificate is the TLS's.
        self.connection = replace(
            bootstrap,
            token=None,
            exec_user=None,
            exec_cluster_config=None,
            client_cert_data=None,
            client_key_data=None,
        )
        self.tls = kube.ReloadableTLSContext(self.connection)
        self.identity: AgentIdentity | None = None

    async def client(self) -> kube.ApiClient:
        """A hub client presenting the current identity (none until :meth:`join`)."""
        return await kube.new_client(
            self.connection, ssl_context=self.tls, keepalive_timeout=HUB_KEEPALIVE_SECONDS
        )

    async def join(self) -> AgentIdentity:
        """The identity, joining first if there is none usable; hub clients use it from now on.

        A hub that does not answer, or refuses the request for now (401, 403: a hub that
        is starting, RBAC not yet granted to the bootstrap group), is asked again with
        backoff (1 s doubling to 30 s; one warning with a hint, one line when it works).
        Every try after a CSR was created makes a new one, as a restart does.

        Raises:
            JoinError: See :func:`ensure_identity` (denied, failed or deleted CSR).
            StateDirError: See :func:`ensure_identity`.
            KubeConfigError: The stored kubeconfig does not load.
        """
        throttle = kube.Throttle(
            f"ask the hub for the certificate of member {self.name}",
            logger=_log,
            backoff=kube.Backoff(first=_JOIN_RETRY[0], cap=_JOIN_RETRY[1]),
            extra={"object": self.name},
        )
        while True:
            try:
                identity = await ensure_identity(
                    self.bootstrap,
                    self.name,
                    self.store,
                    expiration_seconds=self.expiration_seconds,
                    announce=not throttle.failing,
                )
            except JoinError:
                raise
            except kube.KubeConfigError:
                raise
            except kube.KubeError as exc:
                await throttle.pause(exc, note=join_hint(exc, self.bootstrap))
                continue
            throttle.succeeded()
            self._use(identity)
            return identity

    async def keep_fresh(self) -> None:
        """Rotate the certificate when due, for ever (see :func:`keep_identity_fresh`)."""
        await keep_identity_fresh(
            self.bootstrap,
            self.name,
            self.store,
            self._use,
            expiration_seconds=self.expiration_seconds,
        )

    def _use(self, identity: AgentIdentity) -> None:
        # The kubeconfig the store wrote: the clients act as `kubectl --kubeconfig` would.
        self.tls.reload(kube.connection_from_kubeconfig(self.store.kubeconfig_path))
        self.identity = identity
        _log.info(
            "hub clients use the certificate of %s valid until %s",
            self.name,
            identity.not_after.isoformat(),
            extra={"object": self.name},
        )
