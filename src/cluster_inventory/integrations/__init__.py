"""Integrations built on the runtime: controllers that act across the fleet.

- :mod:`cluster_inventory.integrations.configmap_sync`: keep a hub ConfigMap on every member.

Argo CD cluster Secrets, MultiKueue clusters and placement decisions arrive with later issues
(see DESIGN.md).
"""
