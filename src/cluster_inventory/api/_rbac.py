"""The agents' RBAC on the hub, as the Helm chart renders it, shipped in ``api/rbac/``.

The chart (``charts/cluster-inventory``, ``templates/manager/rbac-agents.yaml``) is the one
source of the ClusterRoles ``cluster-inventory:agent-bootstrap`` (create and read CSRs:
what a bootstrap credential may do) and ``cluster-inventory:agent`` (the same, for an
agent's rotations) and their bindings to the bootstrap group and the agents' group.
``make manifests`` cuts them out of ``helm template`` into ``api/rbac/agents.yaml``
(``tests/integration/deploy`` fails while the two differ), so a hub installed without
Helm, such as ``cluster-inventory fleet up``'s, gets the same objects.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import yaml

__all__ = ["load_agent_rbac"]


def load_agent_rbac() -> list[dict[str, Any]]:
    """The ClusterRoles and ClusterRoleBindings of the agents' join, as dicts (file order)."""
    text = files("cluster_inventory.api").joinpath("rbac", "agents.yaml").read_text()
    return [doc for doc in yaml.safe_load_all(text) if doc]
