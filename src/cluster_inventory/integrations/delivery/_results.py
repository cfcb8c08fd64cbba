"""What an apply pass reports: one result per object and member, and the errors it raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cluster_inventory import kube

__all__ = ["Action", "DeliveryError", "ObjectResult", "api_message"]

Action = Literal["created", "configured", "unchanged", "pruned", "failed"]


class DeliveryError(Exception):
    """The targets cannot be selected (no such profile, no decision, a decision in flux)."""


@dataclass(frozen=True, kw_only=True)
class ObjectResult:
    """What happened to one object on one member (one row of ``cluster-inventory apply``).

    Attributes:
        cluster: The member: its ClusterProfile's ``namespace/name``.
        object: kubectl's ``kind[.group]/name``.
        namespace: The object's namespace on the member ("" if cluster-scoped).
        action: created, configured, unchanged, pruned or failed.
        message: Why it failed (the API server's message), or a note.
        server: The member's API server URL ("" if unknown).
    """

    cluster: str
    object: str
    namespace: str
    action: Action
    message: str = ""
    server: str = ""

    @property
    def failed(self) -> bool:
        """True for ``failed``."""
        return self.action == "failed"

    def to_dict(self) -> dict[str, str]:
        """The JSON shape of ``-o json``."""
        return {
            "cluster": self.cluster,
            "object": self.object,
            "namespace": self.namespace,
            "result": self.action,
            "message": self.message,
            "server": self.server,
        }


def api_message(exc: kube.KubeAPIError) -> str:
    """The API server's own message, as a result row shows it."""
    return f"{exc.message} ({exc.status} {exc.reason})" if exc.status else exc.message
