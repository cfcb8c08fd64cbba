"""Check an inventory against the Cluster Inventory API's rules, as any cluster manager may.

The checks are those of the conformance suite proposed upstream (cluster-inventory-api PR
#78): **Required** (the v1alpha2 ClusterProfile resource is served, listable and namespaced;
the inventory has profiles; ``x-k8s.io/cluster-manager`` equals
``spec.clusterManager.name``; a present ``inventory-member-id`` label is non-empty) and
**Optional** (the member id is set and unique per namespace; ``ControlPlaneHealthy`` and
``Joined`` are present; ``status.version.kubernetes`` is set), plus KEP-4322's own rules as
Optional checks (no credential in a profile; access providers that carry no secret;
properties within the API's limits; conditions a person can act on).

Every check is a pure function of plain data (:func:`evaluate`); :func:`run` only reads the
hub. The report has the upstream shape: ``Groups`` (``Required``, ``Optional``) of tests
with ``Desc``, ``Ref``, ``Passed``, ``Failed``, ``Skipped``, ``Conformant`` and ``Message``,
then ``Implementation``, ``Passed`` and ``Total``. Per test, ``Passed``, ``Failed`` and
``Skipped`` count profiles (1 or 0 for a test about the API itself).
"""

from __future__ import annotations

from cluster_inventory.integrations.conformance._checks import CHECKS, Check, Verdict
from cluster_inventory.integrations.conformance._hub import run
from cluster_inventory.integrations.conformance._rendering import (
    dumps_json,
    render_html,
    render_text,
)
from cluster_inventory.integrations.conformance._results import (
    Served,
    TestResult,
    evaluate,
    report,
    required_failed,
)

__all__ = [
    "CHECKS",
    "Check",
    "Served",
    "TestResult",
    "Verdict",
    "dumps_json",
    "evaluate",
    "render_html",
    "render_text",
    "report",
    "required_failed",
    "run",
]
