"""Shopify's Toxiproxy in front of a fleet's servers, for network fault tests (test code only).

Toxiproxy (v2.5.0, built from its Go module into the tools cache by ``cluster-inventory-workshop
install-assets``) is a TCP proxy driven over a small HTTP API on loopback. A
:class:`Front` is one proxy in front of one server (a hub or member kube-apiserver): clients
given :attr:`Front.server` instead of the real URL reach the same server through it (TLS is
end to end, and the serving certificates name 127.0.0.1, so nothing else changes), and the
test adds toxics (:data:`FAULTS`) or disables the proxy to break that one path.

The API is called with aiohttp (the project's HTTP stack); the server process runs for the
test session and is stopped with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from cluster_inventory.testing import free_port
from cluster_inventory.testing.assets import AssetNotFoundError
from cluster_inventory_workshop.tools import find_tool

__all__ = ["FAULTS", "Fault", "Front", "Toxiproxy", "running_toxiproxy"]


@dataclass(frozen=True)
class Fault:
    """One way to break a path: toxics to add, or the proxy disabled.

    Attributes:
        name: Short name used in test ids and the fault matrix.
        toxics: Toxiproxy toxics (``type``, ``stream``, ``attributes``), added together.
        disable: Disable the proxy instead (connections refused, open ones closed).
        disruptive: Whether clients should notice (fail requests) while it lasts; latency
            and a slow close are meant to be absorbed without a word.
    """

    name: str
    toxics: tuple[Mapping[str, Any], ...] = ()
    disable: bool = False
    disruptive: bool = True


#: The faults of the matrix, by name (Toxiproxy's toxic types and attributes, ms and KB/s).
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "latency",
            ({"type": "latency", "stream": "downstream", "attributes": {"latency": 400}},),
            disruptive=False,
        ),
        Fault(
            "bandwidth",
            ({"type": "bandwidth", "stream": "downstream", "attributes": {"rate": 2}},),
        ),
        Fault(
            "reset-peer",
            ({"type": "reset_peer", "stream": "downstream", "attributes": {"timeout": 200}},),
        ),
        Fault(
            "half-open",
            ({"type": "timeout", "stream": "downstream", "attributes": {"timeout": 0}},),
        ),
        Fault(
            "slow-close",
            ({"type": "slow_close", "stream": "downstream", "attributes": {"delay": 3000}},),
            disruptive=False,
        ),
        Fault("disabled", disable=True),
    )
}


@dataclass
class Front:
    """One Toxiproxy proxy in front of one server.

    Attributes:
        name: The proxy's name in Toxiproxy.
        upstream: The real server, ``https://127.0.0.1:PORT``.
        server: The same server through the proxy, ``https://127.0.0.1:LISTEN``.
    """

    toxiproxy: Toxiproxy
    name: str
    upstream: str
    server: str
    toxics: list[str] = field(default_factory=list)

    async def inject(self, fault: Fault) -> None:
        """Break the path with ``fault`` until :meth:`heal`."""
        if fault.disable:
            await self.toxiproxy.call("POST", f"/proxies/{self.name}", {"enabled": False})
            return
        for i, toxic in enumerate(fault.toxics):
            name = f"{fault.name}-{i}"
            await self.toxiproxy.call(
                "POST", f"/proxies/{self.name}/toxics", {"name": name, "toxicity": 1.0, **toxic}
            )
            self.toxics.append(name)

    async def heal(self) -> None:
        """Remove every toxic and enable the proxy again (same listen port)."""
        for name in self.toxics:
            await self.toxiproxy.call("DELETE", f"/proxies/{self.name}/toxics/{name}")
        self.toxics.clear()
        await self.toxiproxy.call("POST", f"/proxies/{self.name}", {"enabled": True})


class Toxiproxy:
    """A Toxiproxy server process on loopback and its HTTP API.

    Raises:
        AssetNotFoundError: The binary is not built; the message says how to build it.
    """

    def __init__(self) -> None:
        self.binary: Path = find_tool("toxiproxy")
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}"
        self._process: asyncio.subprocess.Process | None = None
        self._session: aiohttp.ClientSession | None = None
        self._names = itertools.count()

    async def start(self) -> None:
        """Start the server and wait until its API answers."""
        self._process = await asyncio.create_subprocess_exec(
            str(self.binary), "-host", "127.0.0.1", "-port", str(self.port),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self._session = aiohttp.ClientSession()
        for _ in range(200):
            if self._process.returncode is not None:
                raise RuntimeError(f"toxiproxy exited with {self._process.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with self._session.get(self.api + "/version") as answer:
                    if answer.status == 200:
                        return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"toxiproxy API at {self.api} did not answer")

    async def stop(self) -> None:
        """Stop the server (its proxies close with it)."""
        if self._session is not None:
            await self._session.close()
        if self._process is not None and self._process.returncode is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            await asyncio.wait_for(self._process.wait(), 10)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One API call; returns the decoded JSON (None for an empty answer).

        Raises:
            AssertionError: The API answered with an error status (test code: fail loudly).
        """
        assert self._session is not None
        async with self._session.request(method, self.api + path, json=body) as answer:
            text = await answer.text()
            assert answer.status < 300, f"toxiproxy {method} {path}: {answer.status} {text}"
            return await answer.json(content_type=None) if text.strip() else None

    async def front(self, server: str, label: str = "server") -> Front:
        """A new proxy in front of ``server`` (``https://HOST:PORT``)."""
        parts = urlsplit(server)
        name = f"{label}-{next(self._names)}"
        made = await self.call(
            "POST",
            "/proxies",
            {"name": name, "listen": "127.0.0.1:0", "upstream": f"{parts.hostname}:{parts.port}"},
        )
        return Front(self, name, server, f"https://{made['listen']}")

    async def remove(self, front: Front) -> None:
        """Delete ``front``'s proxy."""
        await self.call("DELETE", f"/proxies/{front.name}")


@contextlib.asynccontextmanager
async def running_toxiproxy() -> AsyncIterator[Toxiproxy]:
    """A started :class:`Toxiproxy`, stopped on exit.

    Raises:
        AssetNotFoundError: Not built (``cluster-inventory-workshop install-assets``).
    """
    try:
        proxy = Toxiproxy()
    except AssetNotFoundError as exc:
        raise AssertionError(str(exc)) from None
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
