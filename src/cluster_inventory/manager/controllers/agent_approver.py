"""The CSR approver: signs off one acceptance's certificate request, deletes what it refuses.

The hub's check of the join (``docs/agent.md``, "Who can obtain which certificate"), as OCM's
registration hub approves a klusterlet's CSR (the label is only a hint: the subject and the
requester bind the request) and stricter. One pure decision, :func:`csr_decision`, for every
CertificateSigningRequest that one of our identities filed (an agent's, user
``cluster-inventory:agent:NAME``; a bootstrap credential's, user
``cluster-inventory:agent-bootstrap:NAME``) or that carries the label
``cluster-inventory.dev/agent``:

- **approve** the CSR of member ``NAME`` only when its shape is exactly the agent's for one
  acceptance ``ACC`` (:func:`~cluster_inventory.api.agents.csr_shape_problem`: subject,
  usages, signer, the name ``cluster-inventory-agent-NAME-ACC``), its duration is within
  ``ManagerConfig.agent_certificate_max_seconds``, ``ACC`` is ``NAME``'s current acceptance,
  and the requester is that acceptance's **bootstrap** identity (user and groups of the
  certificate ``manager bootstrap-kubeconfig --member NAME`` issued, and only until the
  member has joined: a bootstrap credential joins once) or its **agent** (username == the
  CSR's CN, and the acceptance's group: a rotation);
- **delete**, with a Warning Event naming why, a CSR of our identities that can never be
  approved (another member's, another acceptance's, another shape, too long, a bootstrap
  after the join, more than :data:`MAX_PENDING_PER_REQUESTER` pending of one requester) or
  whose acceptance is still not current :data:`STALE_AFTER` seconds after it was made (a
  rejected member's, or one accepted again since);
- **leave pending**, with an Event, a labelled CSR that someone else filed (not ours to
  delete, never ours to approve); ignore every other CSR of the hub.

Each refusal is one Event on the CSR and one on the requester's registration Secret
(``manager agents`` reads those), deduped per CSR and reason. Signing is the signer's
(kube-controller-manager's ``csrsigning``). :class:`AgentApprover` is the controller around
the decision: every CSR of the hub and the registration Secrets from the shared cache, keyed
by CSR name.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.agents import (
    CsrShape,
    acceptance_in_groups,
    csr_shape_problem,
    member_of_bootstrap_user,
    member_of_user,
    read_csr_shape,
)
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    AGENT_GROUP,
    LABEL_AGENT,
    LABEL_REGISTRATION,
    REPORTING_CONTROLLER_MANAGER,
)
from cluster_inventory.api.views import parse_time
from cluster_inventory.controller import Controller, Result
from cluster_inventory.kube import certificates
from cluster_inventory.kube.events import object_reference, record_event
from cluster_inventory.kube.informer import DELETED, strip_managed_fields
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.registration import acceptance_of

__all__ = [
    "MAX_PENDING_PER_REQUESTER",
    "STALE_AFTER",
    "AgentApprover",
    "CsrAction",
    "Decision",
    "Requester",
    "csr_decision",
    "is_pending",
    "read_refusal_note",
    "refusal_note",
    "requester_of",
]

#: At most this many CSRs of one requester may be pending; the newer ones are deleted. The
#: one request an acceptance can ever have approved is one name: a second is never needed.
MAX_PENDING_PER_REQUESTER = 3
#: Seconds a CSR naming an acceptance that is not (yet) its member's current one waits
#: before it is deleted as stale: the approver's cache may lag an ``accept`` by moments.
STALE_AFTER = 60.0
_BY_MEMBER = "member"
_BY_REQUESTER = "requester"
_log = logging.getLogger("cluster_inventory.manager.agent_approver")


def is_pending(csr: dict[str, Any]) -> bool:
    """True while a CSR has no Approved, Denied or Failed condition and no certificate."""
    status = objects.status(csr)
    if status.get("certificate"):
        return False
    kinds = {c.get("type") for c in status.get("conditions") or ()}
    return not kinds & {"Approved", "Denied", "Failed"}


@dataclass(frozen=True)
class Requester:
    """Who filed a CSR, as one of our identities.

    Attributes:
        kind: ``agent`` (an agent's certificate) or ``bootstrap`` (a bootstrap credential).
        member: The member the identity is for.
        acceptance: The acceptance id its groups carry, or None (none, or two).
    """

    kind: str
    member: str
    acceptance: str | None

    def describe(self) -> str:
        """``the agent of member NAME``, ``the bootstrap credential of member NAME``."""
        what = "agent" if self.kind == "agent" else "bootstrap credential"
        return f"the {what} of member {self.member!r}"


def requester_of(username: str, groups: tuple[str, ...]) -> Requester | None:
    """The identity of ours that ``username`` (in ``groups``) is, or None for anyone else.

    An agent is user ``cluster-inventory:agent:NAME`` in ``cluster-inventory:agents``, a
    bootstrap credential ``cluster-inventory:agent-bootstrap:NAME`` in
    ``cluster-inventory:agent-bootstrappers`` (what the API server's x509 authenticator
    reads from the certificates the hub issued). A user with one of the prefixes but not the
    group is ours too (nobody else may use the names): never approved, and deleted.
    """
    member = member_of_user(username)
    if member is not None:
        return Requester("agent", member, acceptance_in_groups(groups, member))
    member = member_of_bootstrap_user(username)
    if member is not None:
        return Requester("bootstrap", member, acceptance_in_groups(groups, member, bootstrap=True))
    if AGENT_GROUP in groups or AGENT_BOOTSTRAP_GROUP in groups:
        return Requester("agent" if AGENT_GROUP in groups else "bootstrap", "", None)
    return None


class CsrAction(enum.Enum):
    """What :func:`csr_decision` says to do with a CSR."""

    APPROVE = "approve"
    WAIT = "wait"  #: leave pending (an Event; reconciled again after ``retry_after``, if any)
    DELETE = "delete"  #: delete it, with an Event
    IGNORE = "ignore"  #: not an agent's: nothing at all


@dataclass(frozen=True)
class Decision:
    """The verdict on one CSR.

    Attributes:
        action: What to do.
        reason: The approval's condition reason, or the Event's reason (CamelCase).
        message: Why, for the condition or the Event (never a key or an acceptance id).
        retry_after: Seconds until the CSR should be judged again (a ``WAIT`` on time).
        requester: Who filed it, if one of ours (for the Event on its registration).
    """

    action: CsrAction
    reason: str = ""
    message: str = ""
    retry_after: float | None = None
    requester: Requester | None = None


def csr_decision(
    shape: CsrShape,
    *,
    current: str | None,
    joined: bool,
    rank: int,
    age: float | None,
    max_seconds: int,
    namespace: str,
) -> Decision:
    """The one approve-or-refuse rule of the hub (``docs/agent.md``); pure.

    Args:
        shape: The pending CSR as read (:func:`~cluster_inventory.api.agents.read_csr_shape`).
        current: The current acceptance id of the member the CSR's label names (from its
            registration Secret), or None: not accepted.
        joined: That member's agent has joined its current acceptance (its heartbeat Lease
            renewed or its report written, or a first CSR approved already).
        rank: 1 for the oldest pending CSR of the CSR's requester, 2 for the next, ...
        age: Seconds since the CSR was created (None: unknown).
        max_seconds: The longest ``spec.expirationSeconds`` approved.
        namespace: The cluster manager's namespace (for messages).

    Returns:
        The decision (see the module's docstring for the order of the checks).
    """
    requester = requester_of(shape.username, shape.groups)
    if requester is None:
        if not shape.member:
            return Decision(CsrAction.IGNORE)
        return Decision(
            CsrAction.WAIT,
            "NotAgentIdentity",
            f"requested by {shape.username!r} (groups {list(shape.groups)}): only member "
            f"{shape.member!r}'s bootstrap credential or its agent may ask; left pending "
            "(never approved, not ours to delete)",
        )

    def delete(reason: str, why: str) -> Decision:
        return Decision(CsrAction.DELETE, reason, f"{why}; deleted", requester=requester)

    asker = requester.describe() if requester.member else f"user {shape.username!r}"
    if rank > MAX_PENDING_PER_REQUESTER:
        return delete(
            "TooManyPending",
            f"{asker} has {rank} pending CSRs (at most {MAX_PENDING_PER_REQUESTER} per "
            "requester; its one approvable request is its acceptance's CSR name)",
        )
    member = shape.member
    if member and requester.member != member:
        return delete(
            "WrongAgent",
            f"requested by {asker} for member {member!r}: an identity asks only for its own "
            "member's certificate",
        )
    problem = csr_shape_problem(shape)
    if problem is not None:
        return delete("InvalidAgentRequest", f"not an agent certificate request: {problem}")
    if shape.expiration_seconds is None or shape.expiration_seconds > max_seconds:
        asked = "none" if shape.expiration_seconds is None else f"{shape.expiration_seconds} s"
        return delete(
            "DurationTooLong",
            f"spec.expirationSeconds is {asked}: at most {max_seconds} s is approved (the "
            "manager's --agent-certificate-max-seconds)",
        )
    if requester.acceptance != shape.acceptance:
        return delete(
            "WrongAcceptance",
            f"{asker} asked for another acceptance of member {member!r} than its own",
        )
    if current != shape.acceptance:
        why = (
            f"the acceptance of member {member!r} it names is not the current one in "
            f"{namespace}: the member was rejected, or never accepted, or accepted again "
            f"since (`cluster-inventory manager bootstrap-kubeconfig --member {member}` "
            "issues the current acceptance's bootstrap credential)"
        )
        if age is None or age >= STALE_AFTER:
            return delete("StaleAcceptance", why)
        return Decision(CsrAction.WAIT, "NotAccepted", why, retry_after=STALE_AFTER - age)
    if requester.kind == "bootstrap":
        if joined:
            return delete(
                "AlreadyJoined",
                f"member {member!r}'s agent has joined its acceptance already: only its own "
                "certificate renews, a bootstrap credential joins once (to join again: "
                f"`manager reject {member}`, `manager accept {member}`, a new bootstrap "
                "credential)",
            )
        if AGENT_BOOTSTRAP_GROUP not in shape.groups:
            return delete("NotBootstrapIdentity", f"{asker} is not in {AGENT_BOOTSTRAP_GROUP}")
        return Decision(
            CsrAction.APPROVE,
            "AgentAccepted",
            f"the bootstrap credential of member {member!r}'s current acceptance",
            requester=requester,
        )
    if shape.common_name != shape.username:  # as OCM: a renewal is the CN's own request
        return delete("WrongAgent", f"{asker} may renew only its own certificate")
    if AGENT_GROUP not in shape.groups:
        return delete("WrongAgent", f"{asker} is not in {AGENT_GROUP}")
    return Decision(
        CsrAction.APPROVE,
        "AgentRotation",
        f"a rotation by member {member!r}'s agent of its current acceptance",
        requester=requester,
    )


def refusal_note(csr: str, decision: Decision) -> str:
    """The note of a refusal's Event on the requester's registration: ``CSR NAME: why``."""
    return f"CSR {csr}: {decision.message}"


def read_refusal_note(note: str) -> tuple[str, str]:
    """(CSR name, why) of a :func:`refusal_note` (``manager agents`` shows both)."""
    named, _, why = note.partition(": ")
    return named.removeprefix("CSR "), why


def _member_of(obj: dict[str, Any]) -> list[str]:
    member = objects.labels_of(obj).get(LABEL_AGENT)
    return [member] if member else []


def _requester_key(obj: dict[str, Any]) -> list[str]:
    spec = objects.spec(obj)
    username = str(spec.get("username") or "")
    groups = tuple(str(g) for g in spec.get("groups") or ())
    return [username] if requester_of(username, groups) is not None else []


class AgentApprover:
    """The controller that judges agent CSRs on the hub (:func:`csr_decision`).

    Args:
        hub: Hub client (CSR ``list``/``watch``/``delete``,
            ``certificatesigningrequests/approval`` ``update``, ``approve`` on signer
            ``kubernetes.io/kube-apiserver-client``, Events).
        config: The manager's settings: ``namespace`` (where registrations live) and
            ``agent_certificate_max_seconds``.
        joined: Whether member NAME's agent has joined (its report or heartbeat written:
            :meth:`~.agent_reports.AgentReports.joined`); a first CSR this approver
            approved counts too.
        registry: Prometheus registry of the controller's metrics.
        identity: ``reportingInstance`` of its Events.
        now: Wall clock (condition and Event times, a CSR's age).

    Attributes:
        controller: The controller (a Runnable): run it alone, or among the cluster
            manager's controllers (:class:`~.cluster_manager.ClusterManagerRunnable` does).
        approved: Names of the CSRs this approver approved (for tests and logs).
        deleted: Names of the CSRs it deleted, and why (its reason), in order.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        joined: Callable[[str], bool] = lambda _member: False,
        registry: CollectorRegistry = REGISTRY,
        identity: str = "cluster-inventory-manager",
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.hub = hub
        self.config = config
        self.identity = identity
        self.now = now
        self._joined = joined
        self.approved: list[str] = []
        self.deleted: list[tuple[str, str]] = []
        #: (member, acceptance) whose first CSR this approver approved: joined from then on.
        self._first: set[tuple[str, str]] = set()
        cache = kube.InformerCache.for_client(hub)
        self.csrs = cache.informer(
            kube.CERTIFICATE_SIGNING_REQUESTS,
            namespaces=[None],
            name="hub CSRs",
            transform=strip_managed_fields,
        )
        self.csrs.add_indexer(_BY_MEMBER, _member_of)
        self.csrs.add_indexer(_BY_REQUESTER, _requester_key)
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

    def _pending(self, index: str, value: str) -> list[dict[str, Any]]:
        return [csr for csr in self.csrs.by_index(index, value) if is_pending(csr)]

    def _csr_keys(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        # A CSR that leaves the pending ones may move its requester's others up the ranks.
        keys = [] if event == DELETED else [str(objects.meta(obj).get("name"))]
        if event == DELETED or not is_pending(obj):
            for requester in _requester_key(obj):
                keys += [_name(c) for c in self._pending(_BY_REQUESTER, requester)]
        return keys

    def _registration_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        return [_name(c) for c in self._pending(_BY_MEMBER, str(objects.meta(obj).get("name")))]

    def _registration(self, member: str) -> dict[str, Any] | None:
        return self.registrations.get(f"{self.config.namespace}/{member}")

    def _rank(self, csr: dict[str, Any]) -> int:
        """1 for the requester's oldest pending CSR (creation time, then name), 2, ..."""
        keys = _requester_key(csr)
        if not keys:
            return 1
        order = sorted(
            (str(objects.meta(c).get("creationTimestamp") or ""), _name(c))
            for c in self._pending(_BY_REQUESTER, keys[0])
        )
        mine = (str(objects.meta(csr).get("creationTimestamp") or ""), _name(csr))
        return order.index(mine) + 1 if mine in order else len(order) + 1

    async def reconcile(self, name: str) -> Result | None:
        """Judge pending CSR ``name`` (:func:`csr_decision`) and act on it.

        Raises:
            KubeAPIError: The approval or the delete was refused (retried with backoff; a
                409 means the CSR changed meanwhile and is reconciled again from the cache).
        """
        csr = self.csrs.get(name)
        if csr is None or not is_pending(csr):
            return None
        shape = read_csr_shape(csr)
        registration = self._registration(shape.member) if shape.member else None
        current = acceptance_of(registration) if registration is not None else None
        created = parse_time(shape.created)
        decision = csr_decision(
            shape,
            current=current,
            joined=bool(shape.member)
            and (self._joined(shape.member) or (shape.member, current or "") in self._first),
            rank=self._rank(csr),
            age=None if created is None else (self.now() - created).total_seconds(),
            max_seconds=self.config.agent_certificate_max_seconds,
            namespace=self.config.namespace,
        )
        if decision.action is CsrAction.IGNORE:
            return None
        if decision.action is CsrAction.APPROVE:
            await self._approve(csr, shape, decision)
            return None
        _log.info(
            "CSR %s %s: %s",
            name,
            "deleted" if decision.action is CsrAction.DELETE else "left pending",
            decision.message,
            extra={"object": name},
        )
        await self._record(csr, decision)
        if decision.action is CsrAction.DELETE:
            uid = str(objects.meta(csr).get("uid") or "") or None
            await kube.delete(self.hub, kube.CERTIFICATE_SIGNING_REQUESTS, name, uid=uid)
            self.deleted.append((name, decision.reason))
            return None
        if decision.retry_after is not None:
            return Result(requeue_after=decision.retry_after)
        return None

    async def _record(self, csr: dict[str, Any], decision: Decision) -> None:
        """One Warning Event on the CSR, one on the requester's registration (if any)."""
        name = _name(csr)
        regarding = [object_reference(csr)]
        requester = decision.requester
        secret = self._registration(requester.member) if requester and requester.member else None
        if secret is not None:
            meta = objects.meta(secret)
            regarding.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "namespace": self.config.namespace,
                    "name": str(meta.get("name")),
                    "uid": str(meta.get("uid") or ""),
                }
            )
        for ref in regarding:
            note = (
                decision.message if ref["kind"] != "Secret" else f"CSR {name}: {decision.message}"
            )
            await record_event(
                self.hub,
                ref,
                reason=decision.reason,
                note=note,
                action="Approve",
                controller=REPORTING_CONTROLLER_MANAGER,
                instance=self.identity,
                dedupe=f"{name}:{decision.reason}",
                now=self.now(),
            )

    async def _approve(self, csr: dict[str, Any], shape: CsrShape, decision: Decision) -> None:
        await certificates.approve(
            self.hub,
            csr,
            reason=decision.reason,
            message=f"approved by the cluster manager {self.config.name!r}: {decision.message}",
            now=self.now(),
        )
        self.approved.append(shape.name)
        if decision.reason == "AgentAccepted":
            self._first.add((shape.member, shape.acceptance))
        _log.info(
            "approved CSR %s of agent member %s (%s)",
            shape.name,
            shape.member,
            "a rotation" if decision.reason == "AgentRotation" else "its bootstrap credential",
            extra={"object": shape.name},
        )


def _name(obj: dict[str, Any]) -> str:
    return str(objects.meta(obj).get("name"))
