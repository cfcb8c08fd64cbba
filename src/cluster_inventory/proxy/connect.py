"""The consumers' side of the cluster proxy: HTTP CONNECT to an agent member, by name.

A consumer names the member in one of two ways (``docs/cluster-proxy.md``, "The profile"):

- **the proxy's user** (what the cluster manager publishes): ``proxy-url``
  ``http://NAME@PROXY:PORT`` and ``server`` ``https://SAN``, a name the member's serving
  certificate holds. The client sends ``CONNECT SAN:443`` with ``Proxy-Authorization: Basic``
  of ``NAME:`` (client-go's and aiohttp's way with a proxy URL's user), and verifies the
  member's certificate against the host of ``server`` as any client does. The target is then
  only the name TLS is verified against: the proxy dials nothing but NAME's tunnel;
- **the target** (for a client given ``tls-server-name``): ``server`` ``https://NAME``,
  ``CONNECT NAME:443``.

On ``200`` the client speaks TLS through the tunnel to the member's API server. The proxy
sees the member's name and counts bytes; it never sees the consumer's credential or a byte
of what it says, and the user is a name, never a secret (a password is refused).

No open proxy: a member is a DNS-1123 label whose agent holds a tunnel to this replica, and
nothing else is dialled. Every refusal is an HTTP status with a one-line reason
(``docs/cluster-proxy.md``, "Refusals"): 400 a malformed request, 405 not CONNECT, 403 a
target that is not a member name at 443 (without a proxy user) or a user that is not a
member name, 404 a member with no tunnel here, 502 the agent could not reach its API server,
504 the agent did not answer, 431 a request head over 8 KiB, 408 none within the timeout.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import logging
import re
from base64 import b64decode
from urllib.parse import quote, urlsplit, urlunsplit

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory.proxy.metrics import ProxyMetrics
from cluster_inventory.proxy.routes import Route, Routes
from cluster_inventory.proxy.tunnel import StreamRefused

__all__ = [
    "HEAD_MAX",
    "MEMBER_PORT",
    "ConnectRefused",
    "ConnectServer",
    "connect_target",
    "member_proxy_url",
]

_log = logging.getLogger("cluster_inventory.proxy")

#: The one port a target may name (the member's API server behind its agent).
MEMBER_PORT = 443
#: Longest request head (bytes) a consumer may send.
HEAD_MAX = 8192
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    504: "Gateway Timeout",
}
_ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


class ConnectRefused(Exception):
    """A CONNECT refused.

    Attributes:
        status: The HTTP status.
        message: The one line the consumer reads.
    """

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"{status} {message}")

    def response(self) -> bytes:
        """The whole HTTP/1.1 answer (the connection is closed after it)."""
        body = (self.message + "\n").encode()
        head = (
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Error')}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body


def member_proxy_url(proxy_url: str, member: str) -> str:
    """``proxy_url`` with ``member`` as its user: how a profile names the member (pure).

    ``http://PROXY:8090`` -> ``http://NAME@PROXY:8090``; a user already there is replaced.
    """
    parts = urlsplit(proxy_url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{quote(member, safe='')}@{netloc}"))


def _proxy_user(lines: list[bytes]) -> str | None:
    """The user of a ``Proxy-Authorization: Basic`` header, or None without one."""
    for raw in lines:
        name, sep, value = raw.partition(b":")
        if not sep or name.strip().lower() != b"proxy-authorization":
            continue
        scheme, _, encoded = value.strip().partition(b" ")
        if scheme.lower() != b"basic":
            raise ConnectRefused(400, "Proxy-Authorization is not Basic (the member's name)")
        try:
            decoded = b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ConnectRefused(400, "Proxy-Authorization is not base64 of NAME:") from None
        user, _, password = decoded.partition(":")
        if password:
            raise ConnectRefused(
                400, "the proxy's user is a member's name, with no password (none is needed)"
            )
        return user
    return None


def connect_target(head: bytes) -> str:
    """The member a CONNECT request head names: its proxy user, else its target (pure).

    Args:
        head: The request line and headers, up to and including the blank line.

    Returns:
        The member name.

    Raises:
        ConnectRefused: 400, 405 or 403 (see the module's docstring).
    """
    line, *headers = head.split(b"\r\n")
    try:
        method, target, version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise ConnectRefused(400, "the request line is not METHOD TARGET HTTP/1.x") from None
    if not version.startswith("HTTP/1."):
        raise ConnectRefused(400, "the request line is not METHOD TARGET HTTP/1.x")
    if method != "CONNECT":
        raise ConnectRefused(405, "this proxy answers CONNECT only")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConnectRefused(400, "the CONNECT target is not HOST:PORT")
    user = _proxy_user(headers)
    if user is not None:
        # The target is only the name TLS is verified against; the user names the member.
        if not _LABEL.match(user):
            raise ConnectRefused(
                403, "the proxy's user is not a member name (a DNS-1123 label); nothing dialled"
            )
        return user
    host = host.lower()
    if not _LABEL.match(host) or int(port) != MEMBER_PORT:
        raise ConnectRefused(
            403,
            f"this proxy reaches agent members only, as MEMBER:{MEMBER_PORT} or as the "
            "proxy's user; no other host or port is dialled",
        )
    return host


class ConnectServer:
    """Answers consumers' CONNECTs with streams over the members' tunnels.

    Args:
        routes: This replica's tunnels.
        head_timeout: Seconds a consumer has to send its request head.
        open_timeout: Seconds the agent has to open the stream.
        registry: Where its answers and streams are counted (:class:`.ProxyMetrics`).
    """

    def __init__(
        self,
        routes: Routes,
        *,
        head_timeout: float = 10.0,
        open_timeout: float = 10.0,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self.routes = routes
        self.head_timeout = head_timeout
        self.open_timeout = open_timeout
        self.metrics = ProxyMetrics.for_registry(registry)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One consumer connection (``asyncio.start_server``'s callback)."""
        try:
            member = await self._target(reader)
            route, stream = await self._open(member, writer)
        except ConnectRefused as refusal:
            self._count(refusal.status)
            _log.debug("CONNECT refused: %s %s", refusal.status, refusal.message)
            with contextlib.suppress(OSError, RuntimeError):
                writer.write(refusal.response())
                await writer.drain()
            writer.close()
            return
        except (OSError, ConnectionError):
            writer.close()
            return
        self._count(200)
        self.metrics.streams.inc()
        try:
            await route.tunnel.carry(stream, reader, writer)
        finally:
            self.metrics.streams.dec()

    async def _open(self, member: str, writer: asyncio.StreamWriter) -> tuple[Route, int]:
        """A stream to ``member`` over its newest tunnel that is still there.

        A tunnel that ends under the request (the duplicate an agent closes when a Service
        led it to a replica it already holds) refused nothing: the next newest is asked. The
        agent's own refusal (502) and its silence (504) are answered as they are.

        Raises:
            ConnectRefused: 404 with no tunnel, 502 or 504 from the last one asked.
        """
        routes = self.routes.newest_first(member)
        if not routes:
            raise ConnectRefused(404, f"member {member} has no agent tunnel to this proxy")
        refused = StreamRefused("no tunnel was asked")
        for route in routes:
            try:
                return route, await route.tunnel.open(
                    writer, preface=_ESTABLISHED, timeout=self.open_timeout
                )
            except StreamRefused as exc:
                refused = exc
                if not exc.tunnel_ended:
                    break
        status = 504 if refused.timed_out else 502
        raise ConnectRefused(status, f"member {member}: {refused.reason}")

    def _count(self, status: int) -> None:
        self.metrics.connects.labels(str(status)).inc()

    async def _target(self, reader: asyncio.StreamReader) -> str:
        try:
            async with asyncio.timeout(self.head_timeout):
                head = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            raise ConnectRefused(408, f"no request head in {self.head_timeout:g} s") from None
        except asyncio.LimitOverrunError:
            raise ConnectRefused(431, f"the request head is over {HEAD_MAX} bytes") from None
        except asyncio.IncompleteReadError:
            raise ConnectRefused(400, "the connection ended inside the request head") from None
        if len(head) > HEAD_MAX:
            raise ConnectRefused(431, f"the request head is over {HEAD_MAX} bytes")
        return connect_target(head)
