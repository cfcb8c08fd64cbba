"""``agent run`` refuses bad flags with one line naming the flag, before reaching any server."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cluster_inventory.cli import app

runner = CliRunner()

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--name", "Member_1"], "error: --name: 'Member_1' is not a DNS-1123 label"),
        (["--name", "m1", "--server", "http://plain:80"], "error: --server: 'http://plain:80'"),
        (["--name", "m1", "--lease-duration", "0"], "error: --lease-duration: 0 s is not positive"),
        (["--name", "m1", "--probe-interval", "-1"], "error: --probe-interval: -1 s"),
        (["--name", "m1", "--rejection-window", "-1"], "error: --rejection-window: -1 s"),
        (["--name", "m1", "--proxy-url", "ftp://p:21"], "error: --proxy-url: 'ftp://p:21'"),
        (["--name", "m1", "--ca-file", "{tmp}/missing.pem"], "error: --ca-file: "),
        (["--name", "m1", "--ca-file", "{tmp}/kubeconfig"], "not a PEM certificate bundle"),
        (["--name", "m1", "--log-format", "xml"], "log format 'xml'"),
        (["--name", "m1", "--metrics-bind-address", "nope"], "bind address 'nope'"),
    ],
)
def test_bad_agent_flags_fail_with_one_line(tmp_path: Path, flags: list[str], said: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    args = ["agent", "run", "--hub-kubeconfig", str(kubeconfig), "--kubeconfig", str(kubeconfig)]
    result = runner.invoke(app, [*args, *(f.format(tmp=tmp_path) for f in flags)])
    assert result.exit_code == 1, result.output
    assert said in result.output
    assert "Traceback" not in result.output
    assert "not-a-real-token" not in result.output


@pytest.mark.parametrize("hubs", [[], ["--hub-kubeconfig", "K", "--bootstrap-kubeconfig", "K"]])
def test_agent_needs_exactly_one_hub_identity(tmp_path: Path, hubs: list[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    flags = [str(kubeconfig) if f == "K" else f for f in hubs]
    result = runner.invoke(app, ["agent", "run", "--name", "m1", *flags])
    assert result.exit_code == 1, result.output
    assert "give exactly one of --hub-kubeconfig and --bootstrap-kubeconfig" in result.output
    assert "Traceback" not in result.output
