"""The versions of what only the workshop builds: interop checks, consumers, tools.

The control planes' and the product's own pins are in :mod:`cluster_inventory_workshop.versions`
(re-exported here, so one import names every pin).
"""

from __future__ import annotations

from cluster_inventory.testing.versions import (
    CLUSTER_INVENTORY_API_VERSION,
    ETCD_VERSION,
    KUBERNETES_VERSION,
    KUEUE_VERSION,
    MIN_GO_VERSION,
)

__all__ = [
    "ARGOCD_VERSION",
    "CLUSTER_API_VERSION",
    "CLUSTER_INVENTORY_API_VERSION",
    "ETCD_VERSION",
    "GITOPS_ENGINE_VERSION",
    "HELM_VERSION",
    "KNATIVE_OPERATOR_VERSION",
    "KUBERNETES_VERSION",
    "KUEUE_VERSION",
    "MIN_GO_VERSION",
    "PROMETHEUS_VERSION",
    "TOXIPROXY_VERSION",
]

#: ``sigs.k8s.io/cluster-api`` module version: the Cluster CRD the Cluster API source reads.
CLUSTER_API_VERSION = "v1.13.1"
#: ``github.com/argoproj/argo-cd/v3`` version the Argo CD interop check is built against.
ARGOCD_VERSION = "v3.5.7"
#: ``github.com/argoproj/argo-cd/gitops-engine/v3`` release standing in for the in-tree copy
#: Argo CD's go.mod replaces it with (absent from the module zip; see ``argocd_check``).
GITOPS_ENGINE_VERSION = "v3.6.0"
#: ``helm.sh/helm/v3`` module version: ``helm`` lints and renders the chart in the tests.
HELM_VERSION = "v3.22.0"
#: ``github.com/prometheus/prometheus`` module version (v0.316.0 is Prometheus 3.16.0):
#: ``promtool`` checks and unit-tests the alerting and recording rules; ``prometheus`` scrapes
#: the availability test's exporter.
PROMETHEUS_VERSION = "v0.316.0"
#: ``github.com/Shopify/toxiproxy/v2`` module version: the TCP proxy the fault tests put
#: between our processes and the fleet's servers (latency, resets, half-open connections).
TOXIPROXY_VERSION = "v2.5.0"
#: ``knative.dev/operator`` module version (Knative v1.22, the first with
#: ``spec.clusterProfileRef``): the operator the Knative end-to-end test runs.
KNATIVE_OPERATOR_VERSION = "v0.50.0"
