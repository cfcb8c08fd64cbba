"""Which agent certificate request the hub approves, deletes or leaves: one rule. Pure.

The decision of the CSR approver (:mod:`~cluster_inventory.manager.controllers.agent_approver`,
``docs/agent.md``, "Who can obtain which certificate"), as OCM's registration hub approves a
klusterlet's CSR (the label is only a hint: the subject and the requester bind the request)
and stricter: :func:`csr_decision` over the CSR as read and what the hub says of its member
(its current acceptance, whether its agent joined), and who filed it (:func:`requester_of`:
one of our identities, an agent or a bootstrap credential, or anyone else). The notes of the
refusals' Events are written and read here too (:func:`refusal_note`, ``manager agents``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.agents import (
    CsrShape,
    acceptance_in_groups,
    csr_shape_problem,
    member_of_bootstrap_user,
    member_of_user,
)
from cluster_inventory.api.constants import (
    AGENT_ACCEPTANCE_GROUP_PREFIX,
    AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX,
    AGENT_BOOTSTRAP_GROUP,
    AGENT_GROUP,
)

__all__ = [
    "MAX_PENDING_PER_REQUESTER",
    "STALE_AFTER",
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
    group is ours too (nobody else may use the names): never approved, and deleted. So is
    one that also carries a group of the other kind (an agent with a bootstrap group, a
    bootstrap credential with an agent's acceptance group): no certificate the hub issues
    has both, so such a requester is nobody's current acceptance (its acceptance is None).
    """
    member = member_of_user(username)
    if member is not None:
        mixed = any(
            g == AGENT_BOOTSTRAP_GROUP or g.startswith(AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX)
            for g in groups
        )
        return Requester("agent", member, None if mixed else acceptance_in_groups(groups, member))
    member = member_of_bootstrap_user(username)
    if member is not None:
        mixed = any(g == AGENT_GROUP or g.startswith(AGENT_ACCEPTANCE_GROUP_PREFIX) for g in groups)
        acceptance = None if mixed else acceptance_in_groups(groups, member, bootstrap=True)
        return Requester("bootstrap", member, acceptance)
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

    def approve(reason: str, what: str) -> Decision:
        return Decision(CsrAction.APPROVE, reason, what, requester=requester)

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
        return approve(
            "AgentAccepted", f"the bootstrap credential of member {member!r}'s current acceptance"
        )
    if shape.common_name != shape.username:  # as OCM: a renewal is the CN's own request
        return delete("WrongAgent", f"{asker} may renew only its own certificate")
    if AGENT_GROUP not in shape.groups:
        return delete("WrongAgent", f"{asker} is not in {AGENT_GROUP}")
    return approve(
        "AgentRotation", f"a rotation by member {member!r}'s agent of its current acceptance"
    )


def refusal_note(csr: str, decision: Decision) -> str:
    """The note of a refusal's Event on the requester's registration: ``CSR NAME: why``."""
    return f"CSR {csr}: {decision.message}"


def read_refusal_note(note: str) -> tuple[str, str]:
    """(CSR name, why) of a :func:`refusal_note` (``manager agents`` shows both)."""
    named, _, why = note.partition(": ")
    return named.removeprefix("CSR "), why
