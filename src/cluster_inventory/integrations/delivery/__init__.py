"""Fleet delivery: server-side apply a set of manifests to every member an inventory selects.

What the Knative Operator does for one member (its manifest install), for a selection of
members: the targets are ClusterProfiles (one by name, by label selector, or the clusters a
PlacementDecision names), each member is reached through the consumer's provider file and
exec plugin (KEP-5339, :func:`cluster_inventory.credentials.connect`), and the set is
applied as ``kubectl apply --server-side`` would apply it:

- CustomResourceDefinitions first, then Namespaces, then everything else (file order within
  each phase); a kind that a CRD of the set defines is waited for until it is served;
- every object gets a result: ``created``, ``configured``, ``unchanged`` (the object did not
  change: same ``resourceVersion``; under ``dryRun`` the server's answer equals what is
  stored) or ``failed`` with the API server's own message (a 422 names the field);
- each member has its own deadline (``timeout``), so one slow or unreachable member fails
  only its own rows while the others go on; members are processed ``concurrency`` at a time;
- an object whose apply could change nothing is not sent (``skip_unchanged``, on by
  default): the stored object already holds every value of the manifest, this field manager
  owns no field the manifest left out, and it last applied at the same apiVersion
  (:func:`apply_is_noop`). Anything else -- drift, a removed field, another manager's
  change, a value the server normalises -- is applied as kubectl would.

With an :class:`ApplySet`, objects removed from the set are removed from the member, and
only those: kubectl's ApplySet convention (KEP-3659). A parent ConfigMap on the member holds
the ``applyset.kubernetes.io/id`` label and the group-kinds and namespaces the set has used;
every member object carries ``applyset.kubernetes.io/part-of``; after a successful apply,
objects labelled part of the set but no longer in it are deleted (with their uid as a
precondition). A member where any apply failed is not pruned.
"""

from __future__ import annotations

from cluster_inventory.api.constants import LABEL_DELIVERY
from cluster_inventory.integrations.delivery import _applyset
from cluster_inventory.integrations.delivery._applyset import *  # noqa: F403 - its __all__
from cluster_inventory.integrations.delivery._fleet import (
    deliver,
    results_json,
    select_profiles,
)
from cluster_inventory.integrations.delivery._manifests import (
    Manifest,
    ManifestError,
    apply_order,
    load_manifests,
)
from cluster_inventory.integrations.delivery._member import ApplyOptions
from cluster_inventory.integrations.delivery._member_pass import apply_to_member
from cluster_inventory.integrations.delivery._noop import apply_is_noop
from cluster_inventory.integrations.delivery._results import (
    Action,
    DeliveryError,
    ObjectResult,
)
from cluster_inventory.integrations.delivery._watch import FleetDelivery, ReportHook

__all__ = [
    "LABEL_DELIVERY",
    "Action",
    "ApplyOptions",
    "DeliveryError",
    "FleetDelivery",
    "Manifest",
    "ManifestError",
    "ObjectResult",
    "ReportHook",
    "apply_is_noop",
    "apply_order",
    "apply_to_member",
    "deliver",
    "load_manifests",
    "results_json",
    "select_profiles",
    *_applyset.__all__,
]
