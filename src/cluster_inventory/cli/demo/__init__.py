"""``cluster-inventory demo``: the whole Cluster Inventory API on a local fleet of real clusters.

What an operator and a consumer do with the API, in order, on one hub and a few member
clusters (real etcd and kube-apiserver processes on loopback, from
:mod:`cluster_inventory.testing`):

1. start the hub and the members;
2. make two inventories on the hub (namespaces labelled with a cluster set) and register
   every member into one or both cluster sets, by its kubeconfig (push mode); one member
   (member3 of three) joins in pull mode instead, by its agent: a bootstrap kubeconfig,
   ``cluster-inventory agent run`` as a process of its own, ``manager accept``
   (``docs/agent.md``);
3. publish ClusterProperty objects (region, account id) on every member;
4. run the cluster manager (``cluster-inventory manager run``, a separate process) and wait
   until every ClusterProfile reports a healthy control plane, its version, its properties and
   an access provider;
5. run the runtime example (:class:`~cluster_inventory.runtime.configmap_sync.ConfigMapSync`)
   as a consumer: it copies a hub ConfigMap to every member of the first inventory;
6. act as that consumer, a hub ServiceAccount whose Role covers only its own inventory
   namespace: load a provider file, reach each member through ``cluster-inventory-secretreader``
   (KEP-5339), list what is there, and be refused the other inventory;
7. as the platform team, place the first inventory's clusters of one region (a ``Placement``
   and the placement scheduler writing PlacementDecisions); as the consumer, apply a small
   manifest set to that placement (``cluster-inventory apply --placement``'s code);
8. keep Argo CD cluster Secrets and Kueue MultiKueueClusters from the first inventory's
   profiles (:mod:`~cluster_inventory.integrations.sync.argocd`,
   :mod:`~cluster_inventory.integrations.sync.multikueue`; the first inventory stands in for
   Kueue's namespace), then take one member out of that inventory and watch both go, and
   come back when it returns;
9. stop one member's API server, watch ``ControlPlaneHealthy`` turn False, start it again and
   watch it recover.

Tables go to stdout, progress to stderr. A step that fails ends the demo with
:class:`DemoError` naming the step; everything started is stopped unless ``keep`` is set.
Each step lives in its own module (``_agent``, ``_consumer``, ``_placement``,
``_integrations``, ``_outage``); ``_demo`` runs them in order. The Kueue CRDs step 8
installs ship as package data (``crds/``, :func:`kueue_crds`), so the demo needs no Go at
run time.
"""

from __future__ import annotations

from cluster_inventory.cli.demo._crds import KUEUE_CRD_FILES, kueue_crds
from cluster_inventory.cli.demo._demo import Demo, profile_table
from cluster_inventory.cli.demo._plan import (
    CONSUMER,
    INVENTORIES,
    PROPERTY_ACCOUNT_ID,
    PROPERTY_REGION,
    DemoError,
    DemoInventory,
    DemoMember,
    demo_members,
)

__all__ = [
    "CONSUMER",
    "INVENTORIES",
    "KUEUE_CRD_FILES",
    "PROPERTY_ACCOUNT_ID",
    "PROPERTY_REGION",
    "Demo",
    "DemoError",
    "DemoInventory",
    "DemoMember",
    "demo_members",
    "kueue_crds",
    "profile_table",
]
