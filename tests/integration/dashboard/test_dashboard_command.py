"""``cluster-inventory dashboard`` as a user runs it: $KUBECONFIG only, loopback, SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import aiohttp
import pytest

from cluster_inventory.testing import Fleet
from tests.support.hub.inventory import Inventory


async def _start(env: dict[str, str], *args: str) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "dashboard",
        "--address",
        "127.0.0.1:0",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
    if not line.startswith("dashboard: "):
        proc.kill()
        _, err = await proc.communicate()
        raise AssertionError(f"no URL printed: {line!r}\n{err.decode()[-2000:]}")
    return proc, line.removeprefix("dashboard: ").strip()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serves_the_hub_from_kubeconfig_on_loopback_and_stops_on_a_signal(
    fleet: Fleet, inventory: Inventory, stop: signal.Signals
) -> None:
    await inventory.publish("alpha", inventory.member(0))
    env = {**os.environ, "KUBECONFIG": str(fleet.hub.kubeconfig_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc, url = await _start(env, "-n", inventory.namespace)
    try:
        assert url.startswith("http://127.0.0.1:")
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "readyz") as ready:
                assert ready.status == 200
            async with http.get(url) as page:
                assert page.status == 200
                text = await page.text()
            assert f"{inventory.namespace}/alpha" in text
            assert '<script src="static/htmx.min.js">' in text
            async with http.get(url + "events") as stream:
                assert stream.headers["Content-Type"].startswith("text/event-stream")
                proc.send_signal(stop)  # with a stream open: it must not hold the exit
                code = await asyncio.wait_for(proc.wait(), 30)
        _, err = await proc.communicate()
        assert code == 0, err.decode()[-2000:]
        assert b"Traceback" not in err and b"Unclosed" not in err, err.decode()[-2000:]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_bad_address_or_hub_ends_with_one_line(fleet: Fleet, tmp_path) -> None:
    env = {**os.environ, "KUBECONFIG": str(fleet.hub.kubeconfig_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "dashboard",
        "--address",
        "nowhere",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 1
    assert err.decode().startswith("error: address 'nowhere': expected HOST:PORT")
    missing = tmp_path / "missing.yaml"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "dashboard",
        "--kubeconfig",
        str(missing),
        "--address",
        "127.0.0.1:0",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 1
    assert err.decode().startswith("error: ") and str(missing) in err.decode()
    assert b"Traceback" not in err
