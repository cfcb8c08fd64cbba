"""The member agent: a pull-mode member reporting itself to the hub (``docs/agent.md``).

A member the hub cannot reach runs ``cluster-inventory agent``, which works the other way
round, as Open Cluster Management's klusterlet does: it joins the hub with a client
certificate the hub approves, then reports from inside. This package holds the agent's side;
it builds on :mod:`cluster_inventory.api`, :mod:`cluster_inventory.kube` and
:mod:`cluster_inventory.credentials` only, never on the cluster manager or the runtime: the
two ends of the join meet only on the hub's objects and in :mod:`cluster_inventory.api.agents`.

- :mod:`.identity`, :mod:`.join`: the agent's key, its CSR, the certificate and its rotation
  (:class:`HubIdentity`: the identity of an agent that joins by itself, for its clients);
- :mod:`.state`: :class:`IdentityStore`, the state directory on the member (what
  ``agent unjoin`` removes);
- :mod:`.config`: :class:`ReportingConfig`, every setting checked before the agent acts;
- :mod:`.rejection`: :class:`RejectionCheck`, when the hub's refusals prove a rejection (a
  starting hub refuses too);
- :mod:`.report`: what the MemberReport's status says and whether it changed (pure);
- :mod:`.reporter`: :class:`MemberReporter` watches the member and writes that status;
- :mod:`.credential`: :class:`ConsumerCredential` mints the consumers' token on the member
  and keeps it in the member's credential Secret on the hub;
- :mod:`.heartbeat`: :class:`Heartbeat` renews the member's Lease on the hub;
- :mod:`.runner`: :class:`ReportingAgent`, both as one runnable for the process Manager.
"""

from __future__ import annotations

from cluster_inventory.agent.config import AgentConfigError, ReportingConfig
from cluster_inventory.agent.credential import (
    DEFAULT_CONSUMER_TOKEN_LIFETIME,
    ConsumerCredential,
    credential_secret,
    parse_service_account,
    stored_rotation,
)
from cluster_inventory.agent.heartbeat import HUB_KEEPALIVE_SECONDS, Heartbeat
from cluster_inventory.agent.identity import (
    AgentIdentity,
    acceptance_of_certificate,
    certificate_request_pem,
    needs_rotation,
    new_private_key,
    renewal_time,
    rotation_time,
)
from cluster_inventory.agent.join import (
    DEFAULT_EXPIRATION_SECONDS,
    HubIdentity,
    JoinError,
    bootstrap_acceptance,
    bootstrap_expired,
    certificate_signing_request,
    ensure_identity,
    join_hint,
    keep_identity_fresh,
    request_certificate,
)
from cluster_inventory.agent.rejection import MemberNotAcceptedError, RejectionCheck, hub_ready
from cluster_inventory.agent.reporter import MemberReporter
from cluster_inventory.agent.runner import ReportingAgent
from cluster_inventory.agent.state import IdentityStore, StateDirError, stored_member

__all__ = [
    "DEFAULT_CONSUMER_TOKEN_LIFETIME",
    "DEFAULT_EXPIRATION_SECONDS",
    "HUB_KEEPALIVE_SECONDS",
    "AgentConfigError",
    "AgentIdentity",
    "ConsumerCredential",
    "Heartbeat",
    "HubIdentity",
    "IdentityStore",
    "JoinError",
    "MemberNotAcceptedError",
    "MemberReporter",
    "RejectionCheck",
    "ReportingAgent",
    "ReportingConfig",
    "StateDirError",
    "acceptance_of_certificate",
    "bootstrap_acceptance",
    "bootstrap_expired",
    "certificate_request_pem",
    "certificate_signing_request",
    "credential_secret",
    "ensure_identity",
    "hub_ready",
    "join_hint",
    "keep_identity_fresh",
    "needs_rotation",
    "new_private_key",
    "parse_service_account",
    "renewal_time",
    "request_certificate",
    "rotation_time",
    "stored_member",
    "stored_rotation",
]
