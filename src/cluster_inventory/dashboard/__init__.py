"""A read-only web page for the inventory, live from the hub (``cluster-inventory dashboard``).

- :mod:`.overview`: what the page shows, as pure functions of the hub's objects
  (inventories, member clusters, placements, conformance; filter and sort).
- :mod:`.hub`: the informers that keep the hub's state and say when it changed.
- :mod:`.server`: aiohttp.web with Jinja2 templates; htmx (shipped in the wheel, with its
  licence) swaps the content in when a Server-Sent Event says the hub changed.

The page reads with whatever identity its hub client has (the viewer's kubeconfig, or the
chart's ServiceAccount with get/list/watch only), never reads a Secret's data (Argo CD
cluster Secrets are listed as metadata), and shows no field of a profile that could hold a
credential: access providers are not rendered at all. See docs/dashboard.md.
"""

from __future__ import annotations

from cluster_inventory.dashboard import overview
from cluster_inventory.dashboard.hub import HubState, Source
from cluster_inventory.dashboard.overview import *  # noqa: F403 - listed once, in overview.__all__
from cluster_inventory.dashboard.server import DEFAULT_ADDRESS, Dashboard, parse_address

__all__ = [
    "DEFAULT_ADDRESS",
    "Dashboard",
    "HubState",
    "Source",
    "parse_address",
    *overview.__all__,
]
