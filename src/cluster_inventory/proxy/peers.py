"""Who an agent at the cluster proxy is, and which member it may serve (``docs/cluster-proxy.md``).

The proxy trusts the hub, never the agent's word: an agent serves member ``NAME`` only when
the hub says its credential is ``cluster-inventory:agent:NAME`` (the identity the cluster
manager's approver issues for that name alone, ``docs/agent.md``) and that identity may
still write the member's heartbeat Lease, a right only the member's current acceptance
holds (``manager reject`` removes it). Two credentials are taken, as the hub's own API
server takes them:

- a **client certificate** the TLS handshake verified against the hub's client CA (the
  CA the API server publishes in ``kube-system/extension-apiserver-authentication``, key
  ``client-ca-file``, as every aggregated API server reads it): user from its CN, groups
  from its O;
- a **bearer token**, sent to the hub in a TokenReview.

Either way a SubjectAccessReview for ``update`` on ``leases/NAME`` in the manager's
namespace decides, with the user and groups the credential proved. A name the identity
does not hold is refused before the hub is asked.
"""

from __future__ import annotations

import datetime as dt
import logging
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.agents import agent_user, check_member_name
from cluster_inventory.api.views import ReviewView

__all__ = [
    "AgentPeer",
    "AgentRefused",
    "Authenticator",
    "certificate_identity",
    "claim_problem",
]

_log = logging.getLogger("cluster_inventory.proxy")


class AgentRefused(Exception):
    """An agent's tunnel is refused.

    Attributes:
        status: The HTTP status the handshake answers (401: no or a bad credential;
            403: a credential that may not serve the member; 400: a bad request).
        problem: Why, for the agent's log (no credential, never a token).
    """

    def __init__(self, status: int, problem: str) -> None:
        self.status = status
        self.problem = problem
        super().__init__(problem)


@dataclass(frozen=True, kw_only=True)
class AgentPeer:
    """An agent the hub vouched for.

    Attributes:
        member: The member it serves.
        user: Its hub user (``cluster-inventory:agent:NAME``).
        groups: Its hub groups.
        expires: When its credential stops being valid (a certificate's ``notAfter``),
            or None (a token: checked again with the rest).
        credential: ``certificate`` or ``token`` (for logs).
    """

    member: str
    user: str
    groups: tuple[str, ...]
    expires: dt.datetime | None
    credential: str


def certificate_identity(cert: Mapping[str, Any]) -> tuple[str, tuple[str, ...], dt.datetime]:
    """User, groups and expiry of a verified peer certificate (``SSLObject.getpeercert()``).

    The Kubernetes rule: the user is the subject's CN, the groups its O values.

    Raises:
        AgentRefused: The subject has no CN (401).
    """
    user = ""
    groups: list[str] = []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    if not user:
        raise AgentRefused(401, "the client certificate has no common name")
    not_after = dt.datetime.fromtimestamp(ssl.cert_time_to_seconds(str(cert["notAfter"])), dt.UTC)
    return user, tuple(groups), not_after


def claim_problem(member: str, user: str) -> str | None:
    """Why ``user`` may not serve ``member`` (pure), or None.

    Only ``cluster-inventory:agent:<member>`` serves ``member``: a bootstrap credential,
    another member's agent or any other user is refused, whatever RBAC it holds.
    """
    if user != agent_user(member):
        return f"the credential is not member {member}'s agent identity"
    return None


class Authenticator:
    """Decides, with the hub, which member a tunnel's agent serves.

    Args:
        hub: The proxy's own client of the hub (it needs ``create`` on tokenreviews and
            subjectaccessreviews).
        namespace: The cluster manager's namespace (the members' Leases).
    """

    def __init__(self, hub: kube.ApiClient, namespace: str) -> None:
        self.hub = hub
        self.namespace = namespace

    async def authenticate(
        self,
        member: str,
        *,
        certificate: Mapping[str, Any] | None,
        token: str | None,
    ) -> AgentPeer:
        """The peer serving ``member``, or why not.

        Args:
            member: The name the agent claims (its request's ``member``).
            certificate: The TLS-verified peer certificate, or None.
            token: The bearer token, or None (a token is used when both are given).

        Raises:
            AgentRefused: No credential, a bad one (401), one that is not ``member``'s
                agent or whose acceptance is gone (403), a bad name (400).
            KubeError: The hub did not answer a review (the caller answers 503).
        """
        try:
            check_member_name(member, source="tunnel", field="member")
        except ValueError as exc:
            raise AgentRefused(400, str(exc)) from None
        if token:
            user, groups = await self._token(token)
            expires, credential = None, "token"
        elif certificate:
            user, groups, expires = certificate_identity(certificate)
            credential = "certificate"
        else:
            raise AgentRefused(401, "no client certificate and no bearer token")
        problem = claim_problem(member, user)
        if problem is not None:
            raise AgentRefused(403, problem)
        if not await self.allowed(member, user, groups):
            raise AgentRefused(
                403,
                f"{user} may not write the Lease of member {member} (not accepted, or rejected)",
            )
        return AgentPeer(
            member=member, user=user, groups=groups, expires=expires, credential=credential
        )

    async def _token(self, token: str) -> tuple[str, tuple[str, ...]]:
        review = await kube.create(
            self.hub, kube.TOKEN_REVIEWS, {"metadata": {}, "spec": {"token": token}}
        )
        answer = ReviewView.of(review)
        if not answer.authenticated:
            raise AgentRefused(401, "the hub did not authenticate the bearer token")
        return answer.username, answer.groups

    async def allowed(self, member: str, user: str, groups: Sequence[str]) -> bool:
        """True if the hub lets ``user`` in ``groups`` update member ``member``'s Lease.

        Raises:
            KubeError: The hub did not answer.
        """
        review = await kube.create(
            self.hub,
            kube.SUBJECT_ACCESS_REVIEWS,
            {
                "metadata": {},
                "spec": {
                    "user": user,
                    "groups": list(groups),
                    "resourceAttributes": {
                        "namespace": self.namespace,
                        "verb": "update",
                        "group": "coordination.k8s.io",
                        "resource": "leases",
                        "name": member,
                    },
                },
            },
        )
        return ReviewView.of(review).allowed
