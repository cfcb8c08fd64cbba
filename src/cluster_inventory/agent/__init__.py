"""agent: ``cluster-inventory agent``, run on a member the hub cannot reach (``docs/agent.md``).

The member's side of a pull-mode member: it joins the hub with a client certificate the
hub approves (:mod:`.identity`, :mod:`.join`), then reports from inside. Above ``api``,
``kube`` and ``credentials``; never imports the cluster manager or the runtime: the two ends
of the join meet only on the hub's objects and in :mod:`cluster_inventory.api.agents`.
"""

from __future__ import annotations

from cluster_inventory.agent.identity import (
    AgentIdentity,
    IdentityStore,
    certificate_request_pem,
    needs_rotation,
    new_private_key,
    renewal_time,
)
from cluster_inventory.agent.join import (
    DEFAULT_EXPIRATION_SECONDS,
    JoinError,
    certificate_signing_request,
    ensure_identity,
    keep_identity_fresh,
    request_certificate,
)

__all__ = [
    "DEFAULT_EXPIRATION_SECONDS",
    "AgentIdentity",
    "IdentityStore",
    "JoinError",
    "certificate_request_pem",
    "certificate_signing_request",
    "ensure_identity",
    "keep_identity_fresh",
    "needs_rotation",
    "new_private_key",
    "renewal_time",
    "request_certificate",
]
