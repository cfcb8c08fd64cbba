"""CLI commands that need no cluster."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from cluster_inventory.cli import app
from cluster_inventory.testing.versions import KUBERNETES_VERSION

runner = CliRunner()


def test_version_names_the_pinned_kubernetes() -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("cluster-inventory ")
    assert KUBERNETES_VERSION in result.stdout


def test_crds_print_is_a_yaml_stream_of_the_three_crds() -> None:
    result = runner.invoke(app, ["crds", "print"])
    assert result.exit_code == 0
    docs = list(yaml.safe_load_all(result.stdout))
    assert sorted(d["metadata"]["name"] for d in docs) == [
        "clusterprofiles.multicluster.x-k8s.io",
        "clusterproperties.about.k8s.io",
        "memberreports.cluster-inventory.dev",
        "placementdecisions.multicluster.x-k8s.io",
        "placements.cluster-inventory.dev",
    ]
    assert all(d["kind"] == "CustomResourceDefinition" for d in docs)


def test_fleet_down_without_a_kept_fleet_fails_cleanly(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path))
    result = runner.invoke(app, ["fleet", "down"])
    assert result.exit_code == 1
    assert "no kept fleet found" in result.output


def test_tables_look_like_kubectl() -> None:
    from cluster_inventory.cli._table import format_table

    assert format_table(("name", "version"), [("hub", "v1.36.3"), ("member-long", "")]) == (
        "NAME          VERSION\nhub           v1.36.3\nmember-long   <none>\n"
    )


def test_dashboard_refuses_a_prometheus_url_that_is_not_http_before_reading_the_hub() -> None:
    result = runner.invoke(
        app, ["dashboard", "--prometheus", "ftp://u:s3cret@x", "--kubeconfig", "/nonexistent"]
    )
    assert result.exit_code == 1
    assert "the URL must be http:// or https://" in result.output
    assert "s3cret" not in result.output and "/nonexistent" not in result.output
