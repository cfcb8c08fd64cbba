"""Forward proxies on loopback for the ``proxy-url`` tests: SOCKS5 and HTTP CONNECT.

Test code only. Each proxy tunnels bytes and records the ``host:port`` every tunnel was
opened to, so a test can tell that a client went through it rather than around it (on
loopback both reach the server). PyPI has no maintained package that serves both kinds and
reports its tunnels to the test; the two handshakes are small (RFC 1928 without
authentication; RFC 9110 section 9.3.6).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import yaml

from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.testing import pipe

if TYPE_CHECKING:
    from cluster_inventory.testing import ControlPlane
    from tests.support.hub.inventory import Inventory


@dataclass
class Proxy:
    scheme: str
    port: int = 0
    #: ``host:port`` of every tunnel opened, in order.
    targets: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


async def _socks5_target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    version, count = await reader.readexactly(2)
    methods = await reader.readexactly(count)
    if version != 5 or 0 not in methods:
        writer.write(b"\x05\xff")
        raise ConnectionError("no acceptable SOCKS5 method")
    writer.write(b"\x05\x00")
    _, command, _, kind = await reader.readexactly(4)
    if kind == 1:
        host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif kind == 4:
        host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    else:
        (length,) = await reader.readexactly(1)
        host = (await reader.readexactly(length)).decode()
    (port,) = struct.unpack("!H", await reader.readexactly(2))
    if command != 1:
        writer.write(b"\x05\x07\x00\x01" + bytes(6))
        raise ConnectionError("only CONNECT")
    return f"{host}:{port}"


async def _http_target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    method, target, _ = head.split("\r\n", 1)[0].split(" ", 2)
    if method != "CONNECT":
        writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        raise ConnectionError("only CONNECT")
    return target


@contextlib.asynccontextmanager
async def serve_proxy(
    scheme: str,
    port: int = 0,
    *,
    path: Path | None = None,
    on_tunnel: Callable[[str], None] | None = None,
) -> AsyncIterator[Proxy]:
    """A ``socks5`` or ``http`` (CONNECT) proxy on 127.0.0.1 while the block runs.

    ``port`` 0 picks a free one; a given port brings back a proxy that was down there.
    ``path``: listen on that Unix socket instead (``port`` stays 0), e.g. inside a network
    namespace whose loopback the test cannot reach (``tests/support/network/netns.py``). ``on_tunnel`` is
    called with each tunnel's ``host:port`` as it opens, besides ``targets``.
    """
    proxy = Proxy(scheme)
    tunnels: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if scheme == "socks5":
                target = await _socks5_target(reader, writer)
            else:
                target = await _http_target(reader, writer)
            host, _, port = target.rpartition(":")
            up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
        except (ConnectionError, OSError, ValueError, asyncio.IncompleteReadError):
            writer.close()
            return
        proxy.targets.append(target)
        if on_tunnel is not None:
            on_tunnel(target)
        if scheme == "socks5":
            writer.write(b"\x05\x00\x00\x01" + bytes(6))
        else:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        task = asyncio.current_task()
        assert task is not None
        tunnels.add(task)
        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            tunnels.discard(task)

    if path is not None:
        server = await asyncio.start_unix_server(handle, path)
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        for task in list(tunnels):
            task.cancel()
        await asyncio.gather(*tunnels, return_exceptions=True)
        await server.wait_closed()


def hostport(server: str) -> str:
    parts = urlsplit(server)
    return f"{parts.hostname}:{parts.port}"


async def publish_behind(inventory: Inventory, name: str, member: ControlPlane, proxy: str) -> None:
    """Publish ``name`` with its access provider reaching ``member`` through ``proxy``."""
    await inventory.publish(name, member)
    await inventory.patch_status(
        name,
        {
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": member.server,
                        "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                        "proxy-url": proxy,
                        "extensions": [
                            {"name": EXTENSION_EXEC, "extension": {"clusterName": name}}
                        ],
                    },
                }
            ]
        },
    )


def hub_kubeconfig_behind(inventory: Inventory, proxy: str, path: Path) -> Path:
    """A copy of the hub's kubeconfig whose cluster has ``proxy-url: proxy``."""
    doc = yaml.safe_load(inventory.fleet.hub.kubeconfig_path.read_text())
    for entry in doc["clusters"]:
        entry["cluster"]["proxy-url"] = proxy
    path.write_text(yaml.safe_dump(doc))
    return path
