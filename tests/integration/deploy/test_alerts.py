"""The alerting rules and the dashboard: promtool checks and unit tests, over metrics we export.

``promtool`` is Prometheus's own, built from its Go module (``make assets``). Every metric an
alert or a dashboard panel names must be one the code registers: the collectors are built
into a fresh registry and their names compared, so a renamed metric breaks this test rather
than a silent alert.
"""

from __future__ import annotations

import json
import re

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials._cache import CredentialMetrics
from cluster_inventory.integrations.sync._mirror import _MirrorMetrics
from cluster_inventory.kube.leaderelection import _LeaderMetrics
from cluster_inventory.kube.workqueue import WorkQueueMetrics
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.runtime._metrics import FleetMetrics
from cluster_inventory_workshop.chart import CHART_DIR
from tests.support.processes.binaries import promtool

FILES = CHART_DIR / "files"
#: Words in PromQL that are not metric names.
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "rate", "by", "without", "histogram_quantile",
    "le", "on", "ignoring", "and", "or", "unless", "bool",
}  # fmt: skip


def exported_metric_names() -> set[str]:
    registry = CollectorRegistry()
    ManagerMetrics.create(registry)
    kube.ReconcileMetrics.for_registry(registry)
    WorkQueueMetrics(registry)
    _LeaderMetrics.create(registry)
    FleetMetrics.create(registry)
    CredentialMetrics.create(registry)
    _MirrorMetrics.create(registry)
    names = set()
    for family in registry.collect():
        names.add(family.name)
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_sum", "_count"),
        }.get(family.type, ("",))
        names.update(family.name + suffix for suffix in suffixes)
    return names


def metric_names(expr: str) -> set[str]:
    without_labels = re.sub(r"\{[^}]*\}", "", expr)
    without_ranges = re.sub(r"\[[^]]*\]", "", without_labels)
    without_groups = re.sub(r"\b(by|without)\s*\([^)]*\)", "", without_ranges)
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", without_groups))
    return {w for w in words if w not in PROMQL_WORDS}


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", "alerts.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 8 rules found" in result.stdout


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", "alerts.test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_issue_s_alerts_exist_and_each_has_a_unit_test() -> None:
    rules = yaml.safe_load((FILES / "alerts.yaml").read_text())["groups"][0]["rules"]
    alerts = {r["alert"] for r in rules}
    assert {
        "ClusterInventoryProfilesUnhealthy",
        "ClusterInventoryReconcileErrors",
        "ClusterInventoryWorkQueueBacklog",
        "ClusterInventoryNoLeader",
        "ClusterInventoryTokenRotationFailing",
        "ClusterInventorySyncCannotRender",
    } <= alerts
    tests = yaml.safe_load((FILES / "alerts.test.yaml").read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t["alert_rule_test"]}
    assert tested == alerts
    for rule in rules:
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_alerts_and_dashboard_use_only_exported_metrics() -> None:
    exported = exported_metric_names()
    rules = yaml.safe_load((FILES / "alerts.yaml").read_text())["groups"][0]["rules"]
    dashboard = json.loads((FILES / "dashboard.json").read_text())
    exprs = [r["expr"] for r in rules] + [
        t["expr"] for p in dashboard["panels"] for t in p["targets"]
    ]
    assert len(exprs) > 20
    for expr in exprs:
        unknown = metric_names(expr) - exported
        assert not unknown, f"{expr!r} names metrics no collector exports: {sorted(unknown)}"
