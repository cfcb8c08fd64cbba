"""Syncs: one object per ClusterProfile, kept for a consumer that does not read profiles.

- :mod:`.argocd`: Argo CD cluster Secrets (Argo CD >= 3.5 exec providers;
  ``cluster-inventory argocd sync``).
- :mod:`.multikueue`: Kueue MultiKueueClusters and a MultiKueueConfig
  (``cluster-inventory multikueue sync|config``).
- :mod:`._mirror`: the loop both are (a :class:`~cluster_inventory.controller.Controller`
  with a pure ``assign`` and ``render``, which exchange :mod:`._assignment`'s types), its
  writes to the targets (:mod:`._targets`), and :mod:`._ownership`: the labels, instances
  and fingerprints that keep each instance to its own objects.

The submodules are imported by name (``from cluster_inventory.integrations.sync.argocd
import ArgoCDSync``), so importing one sync does not load the other.
"""

from __future__ import annotations

from cluster_inventory.integrations.sync._assignment import Assignment, RenderError, RenderPending
from cluster_inventory.integrations.sync._mirror import MirrorOptions, ProfileMirror
from cluster_inventory.integrations.sync._ownership import (
    fingerprint,
    instance_lease_name,
    owner_of,
    validate_instance,
)

__all__ = [
    "Assignment",
    "MirrorOptions",
    "ProfileMirror",
    "RenderError",
    "RenderPending",
    "fingerprint",
    "instance_lease_name",
    "owner_of",
    "validate_instance",
]
