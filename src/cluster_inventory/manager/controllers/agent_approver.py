"""The CSR approver: signs off an accepted agent's certificate request, and nothing else.

The hub's check of the join (``docs/agent.md``, "Joining" step 2), as OCM's registration
hub approves a klusterlet's CSR and kube-controller-manager's ``csrapproving`` a kubelet's:
a CertificateSigningRequest labelled ``cluster-inventory.dev/agent=NAME`` is approved only
if its signer, usages and subject are exactly the agent's (:func:`csr_shape_problem`), the
member ``NAME`` has an agent-mode registration, its requester is a bootstrap identity or
``NAME``'s own agent (a rotation), and at most :data:`MAX_PENDING` CSRs of ``NAME`` are
pending. Anything else stays pending with a Warning Event on the CSR saying why: never
denied (an admin may still accept the member), never approved for another name. Signing is
the signer's (kube-controller-manager's ``csrsigning``).

The decision is pure (:func:`approval_problem`); :class:`AgentApprover` is the controller
around it: CSRs and registration Secrets from the hub's shared cache, keyed by CSR name.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Collection
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.agents import (
    CsrShape,
    agent_user,
    csr_shape_problem,
    member_of_user,
    read_csr_shape,
)
from cluster_inventory.api.constants import (
    LABEL_AGENT,
    LABEL_REGISTRATION,
    REPORTING_CONTROLLER_MANAGER,
)
from cluster_inventory.controller import Controller, Result
from cluster_inventory.kube import certificates
from cluster_inventory.kube.events import object_reference, record_event
from cluster_inventory.kube.informer import DELETED, strip_managed_fields
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.registration import is_agent_registration

__all__ = ["MAX_PENDING", "AgentApprover", "approval_problem", "is_pending"]

#: At most this many CSRs of one member may be pending for any of them to be approved.
MAX_PENDING = 10
_BY_MEMBER = "member"
_log = logging.getLogger("cluster_inventory.manager.agent_approver")


def is_pending(csr: dict[str, Any]) -> bool:
    """True while a CSR has no Approved, Denied or Failed condition and no certificate."""
    status = objects.status(csr)
    if status.get("certificate"):
        return False
    kinds = {c.get("type") for c in status.get("conditions") or ()}
    return not kinds & {"Approved", "Denied", "Failed"}


def approval_problem(
    shape: CsrShape,
    *,
    accepted: bool,
    pending: int,
    bootstrap_groups: Collection[str],
    bootstrap_users: Collection[str],
    namespace: str,
) -> tuple[str, str] | None:
    """Why an agent CSR must not be approved, as (Event reason, message); None to approve.

    Args:
        shape: The CSR as read (:func:`~cluster_inventory.api.agents.read_csr_shape`).
        accepted: Member ``shape.member`` has an agent-mode registration.
        pending: Pending CSRs of that member, this one included.
        bootstrap_groups: Groups that may ask for a first certificate.
        bootstrap_users: Users that may.
        namespace: The cluster manager's namespace (for the message).
    """
    problem = csr_shape_problem(shape)
    if problem is not None:
        return "InvalidAgentRequest", f"not an agent certificate request: {problem}"
    member = shape.member
    asker = member_of_user(shape.username)
    if asker is not None and asker != member:
        return (
            "WrongAgent",
            f"requested by the agent of member {asker!r} for member {member!r}: an agent may "
            "only renew its own certificate",
        )
    bootstrap = shape.username in bootstrap_users or bool(set(shape.groups) & set(bootstrap_groups))
    if asker is None and not bootstrap:
        return (
            "NotBootstrapIdentity",
            f"requester {shape.username!r} (groups {list(shape.groups)}) is neither a "
            f"bootstrap identity nor {agent_user(member)!r}",
        )
    if not accepted:
        return (
            "NotAccepted",
            f"member {member!r} has no agent-mode registration in {namespace}: the hub's admin "
            f"accepts it with 'cluster-inventory manager accept {member} --clusterset SET'",
        )
    if pending > MAX_PENDING:
        return (
            "TooManyPending",
            f"{pending} CSRs of member {member!r} are pending (at most {MAX_PENDING}): delete "
            "the stale ones",
        )
    return None


def _member_of(obj: dict[str, Any]) -> list[str]:
    member = objects.labels_of(obj).get(LABEL_AGENT)
    return [member] if member else []


class AgentApprover:
    """The controller that approves agent CSRs on the hub (:func:`approval_problem`).

    Args:
        hub: Hub client (CSR ``list``/``watch``, ``certificatesigningrequests/approval``
            ``update``, ``approve`` on signer ``kubernetes.io/kube-apiserver-client``,
            Events).
        config: The manager's settings: ``namespace`` (where registrations live) and
            ``agent_bootstrap_groups``/``_users``.
        registry: Prometheus registry of the controller's metrics.
        identity: ``reportingInstance`` of its Events.
        now: Wall clock (condition and Event times).

    Attributes:
        controller: The controller (a Runnable): run it alone, or among the cluster
            manager's controllers (:class:`~.cluster_manager.ClusterManagerRunnable` does).
        approved: Names of the CSRs this approver approved (for tests and logs).
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        registry: CollectorRegistry = REGISTRY,
        identity: str = "cluster-inventory-manager",
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.hub = hub
        self.config = config
        self.identity = identity
        self.now = now
        self.approved: list[str] = []
        cache = kube.InformerCache.for_client(hub)
        self.csrs = cache.informer(
            kube.CERTIFICATE_SIGNING_REQUESTS,
            namespaces=[None],
            label_selector=LABEL_AGENT,
            name="hub agent CSRs",
            transform=strip_managed_fields,
        )
        self.csrs.add_indexer(_BY_MEMBER, _member_of)
        self.registrations = cache.informer(
            kube.SECRETS,
            namespaces=[config.namespace],
            label_selector=f"{LABEL_REGISTRATION}=true",
            name="hub registration Secrets (metadata)",
            metadata_only=True,
            transform=strip_managed_fields,
        )
        self.controller: Controller[str] = (
            Controller(
                "clustermanager-agent-csrs",
                self.reconcile,
                registry=registry,
                describe=lambda key: {"object": f"CertificateSigningRequest {key}"},
                log=_log,
            )
            .watch(self.csrs, self._csr_keys)
            .watch(self.registrations, self._registration_keys)
        )

    def _pending_of(self, member: str) -> list[str]:
        return [
            str(objects.meta(csr).get("name"))
            for csr in self.csrs.by_index(_BY_MEMBER, member)
            if is_pending(csr)
        ]

    def _csr_keys(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        # A CSR that leaves the pending ones may let its member's others through.
        keys = [] if event == DELETED else [str(objects.meta(obj).get("name"))]
        if event == DELETED or not is_pending(obj):
            keys += [k for member in _member_of(obj) for k in self._pending_of(member)]
        return keys

    def _registration_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        return self._pending_of(str(objects.meta(obj).get("name")))

    def _accepted(self, member: str) -> bool:
        secret = self.registrations.get(f"{self.config.namespace}/{member}")
        return secret is not None and is_agent_registration(secret)

    async def reconcile(self, name: str) -> Result | None:
        """Approve CSR ``name`` if :func:`approval_problem` finds nothing, else say why.

        Raises:
            KubeAPIError: The approval was refused (retried with backoff; a 409 means the
                CSR changed meanwhile and is reconciled again from the cache).
        """
        csr = self.csrs.get(name)
        if csr is None or not is_pending(csr):
            return None
        shape = read_csr_shape(csr)
        problem = approval_problem(
            shape,
            accepted=bool(shape.member) and self._accepted(shape.member),
            pending=len(self._pending_of(shape.member)) if shape.member else 0,
            bootstrap_groups=self.config.agent_bootstrap_groups,
            bootstrap_users=self.config.agent_bootstrap_users,
            namespace=self.config.namespace,
        )
        if problem is not None:
            reason, message = problem
            _log.info("CSR %s left pending: %s", name, message, extra={"object": name})
            await record_event(
                self.hub,
                object_reference(csr),
                reason=reason,
                note=message,
                action="Approve",
                controller=REPORTING_CONTROLLER_MANAGER,
                instance=self.identity,
                dedupe=f"{reason}:{message}",
                now=self.now(),
            )
            return None
        await self._approve(csr, shape)
        return None

    async def _approve(self, csr: dict[str, Any], shape: CsrShape) -> None:
        rotation = member_of_user(shape.username) == shape.member
        await certificates.approve(
            self.hub,
            csr,
            reason="AgentRotation" if rotation else "AgentAccepted",
            message=(
                f"approved by the cluster manager {self.config.name!r}: member "
                f"{shape.member!r} is accepted in {self.config.namespace}"
            ),
            now=self.now(),
        )
        self.approved.append(shape.name)
        _log.info(
            "approved CSR %s of agent member %s (%s)",
            shape.name,
            shape.member,
            "a rotation" if rotation else f"bootstrap identity {shape.username}",
            extra={"object": shape.name},
        )
