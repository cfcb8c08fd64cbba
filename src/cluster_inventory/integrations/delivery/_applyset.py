"""KEP-3659 ApplySets as kubectl labels them, and the field manager ``apply`` writes with."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cluster_inventory import __version__
from cluster_inventory.api.constants import (
    APPLYSET_GROUP_KINDS,
    APPLYSET_ID_LABEL,
    APPLYSET_NAMESPACES,
    APPLYSET_PART_OF,
    APPLYSET_TOOLING,
)
from cluster_inventory.api.constants import (
    FIELD_MANAGER_APPLY as FIELD_MANAGER,
)

__all__ = [
    "APPLYSET_GROUP_KINDS",
    "APPLYSET_ID_LABEL",
    "APPLYSET_NAMESPACES",
    "APPLYSET_PART_OF",
    "APPLYSET_TOOLING",
    "FIELD_MANAGER",
    "TOOLING",
    "ApplySet",
]


TOOLING = f"cluster-inventory/v{__version__}"


@dataclass(frozen=True, kw_only=True)
class ApplySet:
    """A KEP-3659 ApplySet whose parent is a ConfigMap on each member.

    Attributes:
        name: The parent ConfigMap's name.
        namespace: Its namespace on the member (must exist there).
    """

    name: str
    namespace: str

    @property
    def id(self) -> str:
        """``applyset-<base64url(sha256(name.namespace.ConfigMap.))>-v1``, kubectl's id."""
        digest = hashlib.sha256(f"{self.name}.{self.namespace}.ConfigMap.".encode()).digest()
        return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"
