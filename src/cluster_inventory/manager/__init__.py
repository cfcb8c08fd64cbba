"""manager: the cluster manager on a hub (``docs/manager.md``).

Member registrations (:mod:`.registration`: Secrets; :mod:`.capi`: Cluster API
Clusters; :mod:`.sources`: a static file and several sources at once) become
ClusterProfiles in inventory namespaces (:mod:`.placement`, pure) with true status
(:mod:`.status`, pure; observed by :mod:`.member`), access providers, and short-lived
member tokens rotated into hub Secrets. :class:`ClusterManagerRunnable` is the reconciler;
:func:`run_manager` the leader-elected process.

Names are imported on first use (PEP 562): the CLI reads the defaults in :mod:`.names`,
and importing a submodule runs this package first, which must not cost the manager's
imports (the kube client, pydantic) on every ``cluster-inventory`` command.
"""

from __future__ import annotations

from cluster_inventory._lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cluster_inventory.manager.capi import ClusterAPISource
    from cluster_inventory.manager.cluster_manager import PLACEMENT, ClusterManagerRunnable
    from cluster_inventory.manager.config import ManagerConfig
    from cluster_inventory.manager.grants import service_account_name
    from cluster_inventory.manager.member import MemberConnection
    from cluster_inventory.manager.placement import Inventory, PlacementPlan, ProfileKey
    from cluster_inventory.manager.registration import (
        Registration,
        RegistrationError,
        RegistrationSource,
        SecretRegistrationSource,
        parse_registration_secret,
    )
    from cluster_inventory.manager.registration_secrets import (
        agent_registration_secret,
        registration_secret,
    )
    from cluster_inventory.manager.runner import LEASE_NAME, default_identity, run_manager
    from cluster_inventory.manager.sources import CombinedSource, FileRegistrationSource
    from cluster_inventory.manager.status import Observation, build_status

_WHERE = {
    "service_account_name": "grants",
    "ClusterAPISource": "capi",
    "PLACEMENT": "cluster_manager",
    "ClusterManagerRunnable": "cluster_manager",
    "ManagerConfig": "config",
    "MemberConnection": "member",
    "Inventory": "placement",
    "PlacementPlan": "placement",
    "ProfileKey": "placement",
    "Registration": "registration",
    "RegistrationError": "registration",
    "RegistrationSource": "registration",
    "SecretRegistrationSource": "registration",
    "parse_registration_secret": "registration",
    "agent_registration_secret": "registration_secrets",
    "registration_secret": "registration_secrets",
    "LEASE_NAME": "runner",
    "default_identity": "runner",
    "run_manager": "runner",
    "CombinedSource": "sources",
    "FileRegistrationSource": "sources",
    "Observation": "status",
    "build_status": "status",
}

__all__ = [
    "LEASE_NAME",
    "PLACEMENT",
    "ClusterAPISource",
    "ClusterManagerRunnable",
    "CombinedSource",
    "FileRegistrationSource",
    "Inventory",
    "ManagerConfig",
    "MemberConnection",
    "Observation",
    "PlacementPlan",
    "ProfileKey",
    "Registration",
    "RegistrationError",
    "RegistrationSource",
    "SecretRegistrationSource",
    "agent_registration_secret",
    "build_status",
    "default_identity",
    "parse_registration_secret",
    "registration_secret",
    "run_manager",
    "service_account_name",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
