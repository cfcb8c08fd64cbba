"""Integrations built on the runtime: controllers that act across the fleet.

- :mod:`cluster_inventory.integrations.placement`: choose clusters for a ``Placement`` and
  publish them as KEP-5313 PlacementDecisions.
- :mod:`cluster_inventory.integrations.delivery`: server-side apply manifests to the members
  a profile, selector or placement chooses (``cluster-inventory apply``).
- :mod:`cluster_inventory.integrations.sync`: keep one Argo CD cluster Secret or Kueue
  MultiKueueCluster per ClusterProfile (``cluster-inventory argocd|multikueue sync``).
- :mod:`cluster_inventory.integrations.conformance`: check an inventory against the Cluster
  Inventory API's rules (``cluster-inventory conformance``).
"""
