"""Integrations built on the runtime: controllers that act across the fleet.

- :mod:`cluster_inventory.integrations.placement`: choose clusters for a ``Placement`` and
  publish them as KEP-5313 PlacementDecisions.
- :mod:`cluster_inventory.integrations.delivery`: server-side apply manifests to the members
  a profile, selector or placement chooses (``cluster-inventory apply``).
- :mod:`cluster_inventory.integrations.argocd`: keep one Argo CD cluster Secret (Argo CD >= 3.5
  exec provider) per ClusterProfile (``cluster-inventory argocd sync``).
- :mod:`cluster_inventory.integrations.multikueue`: keep one Kueue MultiKueueCluster per
  ClusterProfile of Kueue's namespace, and print Kueue's configuration
  (``cluster-inventory multikueue sync|config``).
"""
