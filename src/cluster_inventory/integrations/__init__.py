"""Integrations built on the runtime: controllers that act across the fleet.

- :mod:`cluster_inventory.integrations.configmap_sync`: keep a hub ConfigMap on every member.
- :mod:`cluster_inventory.integrations.placement`: choose clusters for a ``Placement`` and
  publish them as KEP-5313 PlacementDecisions.
- :mod:`cluster_inventory.integrations.delivery`: server-side apply manifests to the members
  a profile, selector or placement chooses (``cluster-inventory apply``).

Argo CD cluster Secrets and MultiKueue clusters arrive with later issues (see DESIGN.md).
"""
