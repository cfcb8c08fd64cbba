"""The availability recording rules: promtool checks them and runs their unit tests (outages).

``files/availability.yaml`` records, per ClusterProfile, whether its member is available and
the share of observed time it was over 1 h, 1 d, 7 d and 30 d, from the kube-state-metrics-style
condition series; ``files/availability.test.yaml`` feeds promtool series with outages (down,
unreachable, a gap nobody exported, a failover between replicas) and the figures they must
give (``availability.long.test.yaml``: the 7 d and 30 d windows).
"""

from __future__ import annotations

import pytest
import yaml

from cluster_inventory.api.constants import METRIC_PROFILE_CONDITION
from cluster_inventory_workshop.chart import CHART_DIR
from tests.support.processes.binaries import promtool

FILES = CHART_DIR / "files"
WINDOWS = ("1h", "1d", "7d", "30d")


def test_promtool_checks_the_availability_rules() -> None:
    result = promtool("check", "rules", "availability.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout


@pytest.mark.parametrize("tests", ["availability.test.yaml", "availability.long.test.yaml"])
def test_the_availability_rules_give_the_outages_figures(tests: str) -> None:
    result = promtool("test", "rules", tests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_there_is_one_rule_per_window_over_the_condition_series() -> None:
    groups = yaml.safe_load((FILES / "availability.yaml").read_text())["groups"]
    rules = {r["record"]: r["expr"] for g in groups for r in g["rules"]}
    assert METRIC_PROFILE_CONDITION in rules["cluster_inventory:cluster_profile_available:max"]
    for window in WINDOWS:
        expr = rules[f"cluster_inventory:cluster_profile_availability:avg_{window}"]
        assert f"[{window}" in expr
    tests = [
        t
        for name in ("availability.test.yaml", "availability.long.test.yaml")
        for t in yaml.safe_load((FILES / name).read_text())["tests"]
    ]
    tested = {case["expr"] for t in tests for case in t.get("promql_expr_test", ())}
    assert tested == set(rules), "every recording rule has a unit test"
