"""Who owns a member among the replicas of a shard group, and the group's settings (pure).

Rendezvous (highest-random-weight) hashing, as multicluster-runtime's sharded provider and
Argo CD's consistent-hashing sharding use: every replica that sees the same peers computes
the same owner; one joining takes about ``1/N`` of the members, one leaving gives only its
own away. :mod:`.sharding` runs the Leases that say who the peers are.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cluster_inventory.api.constants import (
    LABEL_SHARD_GROUP,
)

__all__ = ["LABEL_SHARD_GROUP", "ShardConfig", "lease_name", "rendezvous_owner"]

_NOT_NAME = re.compile(r"[^a-z0-9-]+")


def _score(replica: str, member: str) -> int:
    digest = hashlib.blake2b(f"{replica}\0{member}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_owner(member: str, replicas: Iterable[str]) -> str | None:
    """The replica owning ``member`` among ``replicas`` (highest random weight), or None.

    Pure: every replica that sees the same ``replicas`` gets the same answer; removing a
    replica moves only its own members, adding one takes about ``1/N`` from each.
    """
    best: tuple[int, str] | None = None
    for replica in replicas:
        candidate = (_score(replica, member), replica)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


def lease_name(group: str, identity: str) -> str:
    """The Lease name of ``identity`` in ``group``: a DNS-1123 subdomain of <= 63 characters."""
    base = _NOT_NAME.sub("-", f"{group}-{identity}".lower()).strip("-") or "replica"
    digest = hashlib.sha256(f"{group}\0{identity}".encode()).hexdigest()[:8]
    return f"{base[:54].strip('-')}-{digest}"


@dataclass(frozen=True, kw_only=True)
class ShardConfig:
    """Where the replica Leases are and how long things take (seconds).

    Attributes:
        namespace: Hub namespace of the Leases.
        group: The shard group: replicas of one component with this group share members
            (the cluster manager uses its name).
        identity: This replica (pod name, or host + pid); unique in the group.
        lease_duration: A peer whose Lease did not change for this long is gone (10).
        renew_interval: Seconds between renewals of our Lease (2): ``replicas / renew_interval``
            hub writes per second at rest.
        settle: After joining, seconds to wait for peers starting at the same time before
            claiming members, so a cold start of R replicas does not first give every member
            to the first one up.

    Raises:
        ValueError: ``lease_duration > renew_interval > 0`` does not hold, or an empty
            identity or group.
    """

    namespace: str
    group: str
    identity: str
    lease_duration: float = 10.0
    renew_interval: float = 2.0
    settle: float = 1.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_interval > 0:
            raise ValueError(
                "sharding needs lease_duration > renew_interval > 0, got "
                f"{self.lease_duration}/{self.renew_interval}"
            )
        if self.settle < 0:
            raise ValueError(f"sharding settle must be >= 0, got {self.settle}")
        if not self.identity or not self.group:
            raise ValueError("sharding needs a non-empty identity and group")
