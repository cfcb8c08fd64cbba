"""The virtual members' proxy: its binary, built from the Go source on first use, and the ids.

``virtualmembers/main.go`` (standard library only) is built into ``~/.cache/cluster-inventory``
once per source digest; :func:`member_id` is the ``kube-system`` UID it answers with for
virtual member ``n``. :class:`~cluster_inventory_workshop.virtual_members.VirtualMembers` runs it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path

from cluster_inventory.testing.gobuild import build_source, cache_root, is_executable

__all__ = ["member_id", "virtual_members_binary"]

#: Namespace of the UUIDv5 member ids (RFC 9562 name-based UUIDs): a fixed random UUID.
_ID_NAMESPACE = uuid.UUID("6f1d3c1e-2a8b-4c55-9a43-7c1b0e8f5d21")
_SOURCE = Path(__file__).parent / "virtualmembers"


def member_id(n: int) -> str:
    """Return the ``kube-system`` UID that virtual member ``n`` reports: its member id.

    A UUIDv5 of ``n`` (RFC 9562), so the same index has the same id in every run and on
    every proxy. The cluster manager takes a member's ``kube-system`` namespace UID as its
    member id (``docs/manager.md``).

    Raises:
        ValueError: ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"virtual member index {n} is negative")
    return str(uuid.uuid5(_ID_NAMESPACE, str(n)))


def virtual_members_binary(*, progress: Callable[[str], None] | None = None) -> Path:
    """Return the proxy binary, building it from the shipped Go source on first use.

    Cached under ``~/.cache/cluster-inventory/tools/virtualmembers-<source digest>/``, so an
    edited source is rebuilt and concurrent callers build once (a file lock).

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: The build failed (the message carries the compiler's output).
    """
    digest = hashlib.sha256()
    for file in sorted(_SOURCE.glob("*.go")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    target = cache_root() / "tools" / f"virtualmembers-{digest.hexdigest()[:16]}" / "virtualmembers"
    if is_executable(target):
        return target
    return build_source(
        _SOURCE,
        target,
        lock=cache_root() / "tools" / ".virtualmembers.lock",
        work=cache_root() / "build" / "virtualmembers",
        progress=progress,
    )
