"""Every command gives up on a silent server after one client timeout (docs/cli.md).

Issue 32: ``get`` against a server that accepts connections and never answers waited twice
as long as the other commands: its fast path timed out, then the full client tried again.
The tarpit counts connections, so the test sees the second try without timing anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from cluster_inventory.api.constants import REQUEST_TIMEOUT
from cluster_inventory.testing import Fleet
from tests.cli_run import cli
from tests.tarpit import serve_tarpit


async def test_get_and_describe_give_up_after_one_timeout(fleet: Fleet, tmp_path: Path) -> None:
    commands = {
        "get": ["get", "-n", "team-a"],
        "get-all": ["get", "-A"],
        "describe": ["describe", "c1", "-n", "team-a"],
    }
    async with serve_tarpit() as tarpit:
        config = fleet.hub.kubeconfig()
        config["clusters"][0]["cluster"]["server"] = tarpit.server
        kubeconfig = tmp_path / "silent.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        results = await asyncio.gather(
            *(
                asyncio.to_thread(cli, *args, "--kubeconfig", str(kubeconfig), timeout=3 * 60)
                for args in commands.values()
            )
        )
        connections = tarpit.connections
    for name, result in zip(commands, results, strict=True):
        assert result.returncode == 1, (name, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (name, result.stderr)
        assert lines[0].startswith("error: "), (name, lines)
        assert f"{tarpit.server} unreachable: no answer within {REQUEST_TIMEOUT:g} s" in lines[0]
    # One connection per command: nobody tried a second time after the timeout.
    assert connections == len(commands)


def test_the_plugins_small_client_uses_the_one_timeout() -> None:
    import inspect

    from cluster_inventory.credentials.plugins.hub import Hub

    default = inspect.signature(Hub.get_json).parameters["timeout"].default
    assert default == REQUEST_TIMEOUT
