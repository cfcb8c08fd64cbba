"""Which member a registration reaches: the keys of the member pool. Pure.

Every controller of the cluster manager finds a member by one key (``docs/manager.md``):

- a member the manager dials is keyed by its connection without what does not change where
  it leads (:func:`member_key`: the display name and the kubeconfig's namespace go), so
  registrations reaching one API server with one credential share one connection, one probe
  and one ClusterProperty watch;
- an agent member (``docs/agent.md``) is never dialled: it is keyed by the registration
  Secret that accepted it, :class:`AgentMemberKey` (its hub namespace and name), and
  observed from what its agent reports there.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from cluster_inventory import kube

__all__ = ["AgentMemberKey", "MemberKey", "member_key", "member_label"]


@dataclass(frozen=True)
class AgentMemberKey:
    """The key of an agent member: the hub namespace and name it was accepted under.

    Attributes:
        namespace: The cluster manager's hub namespace (where ``manager accept`` wrote).
        name: The member's name (its registration Secret, MemberReport and Lease).
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"agent member {self.namespace}/{self.name}"


#: The key of a member in the member pool: a dialled member's connection key, or an agent's.
MemberKey = kube.ClusterConnection | AgentMemberKey


@functools.lru_cache(maxsize=1 << 16)
def member_key(reach: MemberKey) -> MemberKey:
    """The pool's key of the member ``reach`` leads to (a registration's ``connection``).

    A connection without its display name and namespace (they do not change which API
    server is reached with which credential); an :class:`AgentMemberKey` as it is.
    Memoized: an inventory pass asks for the key of every registration, thousands at a time.
    """
    if isinstance(reach, AgentMemberKey):
        return reach
    return dataclasses.replace(reach, name="", namespace=None)


def member_label(key: MemberKey) -> str:
    """The member for logs and log fields: a dialled member's server, or the agent member."""
    return str(key) if isinstance(key, AgentMemberKey) else key.server
