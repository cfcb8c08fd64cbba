"""The repository's workshop: what our tests, benches and ``make`` targets use, never shipped.

controller-runtime keeps ``setup-envtest`` apart from ``envtest``; this distribution
(``cluster-inventory-workshop``, a uv workspace member, ``Private :: Do Not Upload``) keeps
the same line. The wheel ships the harness (:mod:`cluster_inventory.testing`: control planes,
the fleet, the asset installer, an opt-in pytest plugin); here live the builders of upstream
interop plugins, CRDs, consumers and tools, the Argo CD and ``pkg/access`` checks, the
virtual members' proxy, chart rendering (which reads the checkout) and a headless browser.

``cluster-inventory-workshop install-assets`` builds everything the suite needs.
"""

from __future__ import annotations

from cluster_inventory_workshop.upstream_crds import go_module_dir, upstream_crd
from cluster_inventory_workshop.upstream_plugins import upstream_plugin
from cluster_inventory_workshop.virtual_members import LABEL_VIRTUAL_MEMBER, VirtualMembers
from cluster_inventory_workshop.virtual_members_proxy import member_id, virtual_members_binary

__all__ = [
    "LABEL_VIRTUAL_MEMBER",
    "VirtualMembers",
    "go_module_dir",
    "member_id",
    "upstream_crd",
    "upstream_plugin",
    "virtual_members_binary",
]
