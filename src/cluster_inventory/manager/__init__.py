"""manager: the cluster manager on a hub (``docs/manager.md``).

Member registrations (:mod:`.sources`: Secrets, Cluster API Clusters, a static file, several
at once) become ClusterProfiles in inventory namespaces (:mod:`.rules.inventory`, pure) with
true status (:mod:`.rules.status`, pure; observed by :mod:`.members`), access providers, and
short-lived member tokens rotated into hub Secrets (:mod:`.controllers`).
:class:`ClusterManagerRunnable` wires them; :func:`run_manager` is the leader-elected
process; :mod:`.admin` holds the one-shot operations the CLI runs. ``docs/architecture.md``
names every module and its role.

Names are imported on first use (PEP 562): the CLI reads the defaults in :mod:`.rules.names`,
and importing a submodule runs this package first, which must not cost the manager's
imports (the kube client, pydantic) on every ``cluster-inventory`` command.
"""

from __future__ import annotations

from cluster_inventory._lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cluster_inventory.manager.admin.registration_secrets import (
        agent_registration_secret,
        registration_secret,
    )
    from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable
    from cluster_inventory.manager.config import ManagerConfig
    from cluster_inventory.manager.controllers.inventory_controller import PLACEMENT
    from cluster_inventory.manager.members.connection import MemberConnection
    from cluster_inventory.manager.rules.grants import service_account_name
    from cluster_inventory.manager.rules.inventory import (
        Inventory,
        InventoryPlan,
        PlacementPlan,
        ProfileKey,
    )
    from cluster_inventory.manager.rules.registration import (
        Registration,
        RegistrationError,
        parse_registration_secret,
    )
    from cluster_inventory.manager.rules.status import Observation, build_status
    from cluster_inventory.manager.runner import LEASE_NAME, default_identity, run_manager
    from cluster_inventory.manager.sources.capi import ClusterAPISource
    from cluster_inventory.manager.sources.combined import CombinedSource
    from cluster_inventory.manager.sources.file import FileRegistrationSource
    from cluster_inventory.manager.sources.secrets import SecretRegistrationSource
    from cluster_inventory.manager.sources.source import RegistrationSource

_WHERE = {
    "service_account_name": "rules.grants",
    "ClusterAPISource": "sources.capi",
    "PLACEMENT": "controllers.inventory_controller",
    "ClusterManagerRunnable": "cluster_manager",
    "ManagerConfig": "config",
    "MemberConnection": "members.connection",
    "Inventory": "rules.inventory",
    "InventoryPlan": "rules.inventory",
    "PlacementPlan": "rules.inventory",
    "ProfileKey": "rules.inventory",
    "Registration": "rules.registration",
    "RegistrationError": "rules.registration",
    "RegistrationSource": "sources.source",
    "SecretRegistrationSource": "sources.secrets",
    "parse_registration_secret": "rules.registration",
    "agent_registration_secret": "admin.registration_secrets",
    "registration_secret": "admin.registration_secrets",
    "LEASE_NAME": "runner",
    "default_identity": "runner",
    "run_manager": "runner",
    "CombinedSource": "sources.combined",
    "FileRegistrationSource": "sources.file",
    "Observation": "rules.status",
    "build_status": "rules.status",
}

__all__ = [
    "LEASE_NAME",
    "PLACEMENT",
    "ClusterAPISource",
    "ClusterManagerRunnable",
    "CombinedSource",
    "FileRegistrationSource",
    "Inventory",
    "InventoryPlan",
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
