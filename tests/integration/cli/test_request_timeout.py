"""Every command gives up on a silent server after one client timeout (docs/cli.md).

Issue 32: ``get`` against a server that accepts connections and never answers waited twice
as long as the other commands: its fast path timed out, then the full client tried again.
The tarpit counts connections, so the test sees the second try without timing anything.
The commands wait a short ``--request-timeout`` (or ``$CLUSTER_INVENTORY_REQUEST_TIMEOUT``)
rather than the default 30 s: the same path, and the message names the timeout used.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from cluster_inventory.api.constants import REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV
from cluster_inventory.testing import Fleet
from tests.support.network.tarpit import serve_tarpit
from tests.support.processes.cli import cli

#: Seconds the commands below wait (a tarpit never answers, so any wait shows the same).
SHORT = 2.5


async def test_get_and_describe_give_up_after_one_timeout(fleet: Fleet, tmp_path: Path) -> None:
    option = ["--request-timeout", f"{SHORT:g}"]
    commands = {
        "get": [*option, "get", "-n", "team-a"],
        "get-all": ["get", "-A"],  # through the environment variable instead
        "describe": [*option, "describe", "c1", "-n", "team-a"],
    }
    env = {REQUEST_TIMEOUT_ENV: f"{SHORT:g}"}
    async with serve_tarpit() as tarpit:
        config = fleet.hub.kubeconfig()
        config["clusters"][0]["cluster"]["server"] = tarpit.server
        kubeconfig = tmp_path / "silent.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        results = await asyncio.gather(
            *(
                asyncio.to_thread(
                    cli,
                    *args,
                    "--kubeconfig",
                    str(kubeconfig),
                    env=env if name == "get-all" else None,
                    timeout=3 * 60,
                )
                for name, args in commands.items()
            )
        )
        connections = tarpit.connections
    for name, result in zip(commands, results, strict=True):
        assert result.returncode == 1, (name, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (name, result.stderr)
        assert lines[0].startswith("error: "), (name, lines)
        assert f"{tarpit.server} unreachable: no answer within {SHORT:g} s" in lines[0]
    # One connection per command: nobody tried a second time after the timeout.
    assert connections == len(commands)


def test_the_plugins_small_client_uses_the_one_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from cluster_inventory.api.constants import REQUEST_TIMEOUT_ENV
    from cluster_inventory.credentials.plugins import hub

    assert (hub.DEFAULT_TIMEOUT, hub.TIMEOUT_ENV) == (REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV)
    monkeypatch.delenv(REQUEST_TIMEOUT_ENV, raising=False)
    assert hub.request_timeout() == REQUEST_TIMEOUT
    monkeypatch.setenv(REQUEST_TIMEOUT_ENV, "2.5")
    assert hub.request_timeout() == 2.5
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv(REQUEST_TIMEOUT_ENV, bad)
        assert hub.request_timeout() == REQUEST_TIMEOUT, bad


def test_the_commands_wait_request_timeout_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from typer.testing import CliRunner

    from cluster_inventory import kube
    from cluster_inventory.cli.app import _root, app

    option = inspect.signature(_root).parameters["request_timeout"].default
    assert option == REQUEST_TIMEOUT
    monkeypatch.delenv(REQUEST_TIMEOUT_ENV, raising=False)
    assert kube.request_timeout() == REQUEST_TIMEOUT
    monkeypatch.setenv(REQUEST_TIMEOUT_ENV, f"{SHORT:g}")
    assert kube.request_timeout() == SHORT
    refused = CliRunner().invoke(app, ["--request-timeout", "0", "version"])
    assert refused.exit_code == 2, refused.output
