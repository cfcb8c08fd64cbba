"""A small HTTPS client for the hub, on the standard library only.

The exec plugins run once per credential fetch, and ``cluster-inventory get`` once per
command a person types, so their start-up is the product: importing aiohttp and
kubernetes_asyncio costs more than everything else they do. This finds the hub with the
project's one kubeconfig loader (:mod:`cluster_inventory.kubeconfig`: kubectl's rules, on
the standard library), builds a TLS context with the CA kept in memory, and makes one
HTTP/1.0 GET, through the cluster's ``proxy-url`` if it has one. Exec users are refused:
callers fall back to :mod:`cluster_inventory.kube`, which handles everything.
"""

from __future__ import annotations

import binascii
import os

TYPE_CHECKING = False  # typing costs a measurable share of a cold start
if TYPE_CHECKING:
    import ssl
    from typing import Any

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_ENV",
    "Hub",
    "HubError",
    "HubTimeoutError",
    "b64decode",
    "https_get",
    "quote",
    "read_file",
    "request_timeout",
]


#: The one client timeout and the variable that changes it, ``api.constants.REQUEST_TIMEOUT``
#: and ``REQUEST_TIMEOUT_ENV`` written out: importing the api package costs a plugin run a
#: few percent (a test keeps them equal).
DEFAULT_TIMEOUT = 30.0
TIMEOUT_ENV = "CLUSTER_INVENTORY_REQUEST_TIMEOUT"


def request_timeout() -> float:
    """Seconds to wait for the hub, per connect and per read.

    ``$CLUSTER_INVENTORY_REQUEST_TIMEOUT`` when it holds a positive number (the CLI's
    ``--request-timeout`` sets it for what it starts; a kubeconfig may set it in the exec
    entry's ``env``), else :data:`DEFAULT_TIMEOUT`.
    """
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_TIMEOUT


class HubError(Exception):
    """The hub cannot be reached as configured; the message names the file or server."""


class HubTimeoutError(HubError):
    """The hub did not answer within the timeout (a retry would only wait as long again)."""


def read_file(path: str) -> bytes:
    """The bytes of ``path``."""
    with open(path, "rb") as handle:
        return handle.read()


def b64decode(value: str) -> bytes:
    """Decode base64 text."""
    # binascii directly: the base64 module imports re, a few milliseconds of cold start.
    return binascii.a2b_base64(value.encode())


def quote(segment: str) -> str:
    """Percent-encode one URL path segment (urllib.parse costs a measurable import)."""
    safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode()) for c in segment)


def _split_server(server: str) -> tuple[str, int, str]:
    """``https://host:port/prefix`` to (host, port, prefix)."""
    scheme, sep, rest = server.partition("://")
    if not sep or scheme != "https":
        raise HubError(f"hub server {server!r} is not an https URL")
    hostport, _, prefix = rest.partition("/")
    if hostport.startswith("["):
        host, _, port_text = hostport[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = hostport.partition(":")
    try:
        port = int(port_text) if port_text else 443
    except ValueError:
        raise HubError(f"hub server {server!r} has a bad port") from None
    return host, port, ("/" + prefix).rstrip("/")


def https_get(
    host: str,
    port: int,
    path: str,
    headers: dict[str, str],
    *,
    context: ssl.SSLContext,
    server_name: str | None,
    timeout: float,
    proxy_url: str | None = None,
) -> tuple[int, bytes]:
    """One HTTP/1.0 GET over TLS, directly or through ``proxy_url``; returns (status, body).

    Not http.client: it imports the email package (header parsing), and a plugin run on
    http.client took a third longer than this one (57 ms against 43 ms, median of 40 paired
    runs), over the plugin's 10% budget (docs/architecture.md, "HTTP stack and proxies").
    HTTP/1.0 with ``Connection: close`` needs no chunked decoding or connection reuse, so
    the request is a few lines and the response a split at the blank line. A proxy (http,
    https or socks5, as kubectl takes ``proxy-url``) is reached through python-socks,
    imported only then: an https proxy needs TLS inside TLS, which http.client's tunnel
    does not do.

    Raises:
        OSError: The connection, the proxy or TLS failed, or the answer is not HTTP.
        HubError: ``proxy_url`` is not http, https or socks5.
    """
    import socket  # here, not above: ``--help`` and argument errors never connect

    lines = [f"GET {path} HTTP/1.0", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    chunks = []
    if proxy_url:
        stream = _proxy_stream(proxy_url, host, port, timeout)
        try:
            tls = stream.start_tls(server_name or host, context)
            tls.write(request)
            while chunk := tls.read(65536):
                chunks.append(chunk)
        finally:
            stream.close()
    else:
        with (
            socket.create_connection((_ascii(host), port), timeout) as raw,  # type: ignore[arg-type]
            context.wrap_socket(raw, server_hostname=_ascii(server_name or host)) as sock,
        ):
            sock.sendall(request)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    response = b"".join(chunks)
    head, _, body = response.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise OSError("malformed HTTP response")
    return int(status_line[1]), body


def _ascii(name: str) -> str | bytes:
    """``name`` as bytes when it is ASCII, so that neither the resolver nor ssl encodes it.

    Both encode a ``str`` host with the ``idna`` codec, whose import (stringprep,
    unicodedata) is a few percent of a plugin run; for an ASCII name (every IP address and
    almost every DNS name) that encoding changes nothing. Other names stay ``str``.
    """
    return name.encode("ascii") if name.isascii() else name


def _proxy_stream(proxy_url: str, host: str, port: int, timeout: float) -> Any:
    """A python-socks stream to ``host:port`` through the proxy (a tunnel, not yet TLS)."""
    import ssl
    from urllib.parse import urlsplit

    from python_socks import ProxyError, ProxyType
    from python_socks.sync.v2 import Proxy

    parts = urlsplit(proxy_url)
    kinds = {"http": ProxyType.HTTP, "https": ProxyType.HTTP, "socks5": ProxyType.SOCKS5}
    if parts.scheme not in kinds or not parts.hostname:
        raise HubError(f"proxy-url of scheme {parts.scheme!r}: must be http, https or socks5")
    proxy = Proxy(
        kinds[parts.scheme],
        parts.hostname,
        parts.port
        or (1080 if parts.scheme == "socks5" else 443 if parts.scheme == "https" else 80),
        username=parts.username,
        password=parts.password,
        rdns=True,  # the proxy resolves the name, as Go's SOCKS5 dialer has it do
        proxy_ssl=ssl.create_default_context() if parts.scheme == "https" else None,
    )
    try:
        return proxy.connect(host, port, timeout=timeout)
    except ProxyError as exc:
        raise OSError(f"proxy {parts.hostname}:{parts.port}: {exc}") from None


class Hub:
    """Where the hub is and how to authenticate to it."""

    def __init__(self, opts: dict[str, str]) -> None:
        """Read the hub's address and credentials.

        Args:
            opts: ``kubeconfig`` and ``context``; the hub is found by kubectl's rules
                (``--kubeconfig``, every ``$KUBECONFIG`` path merged, in-cluster,
                ``~/.kube/config``: :func:`cluster_inventory.kubeconfig.load`).

        Raises:
            HubError: No configuration is found, it is unreadable, names no usable cluster
                or context, or uses an exec or auth-provider user (this client does not run
                plugins).
        """
        from cluster_inventory import kubeconfig

        try:
            loaded = kubeconfig.load(opts.get("kubeconfig") or None, context=opts.get("context"))
        except kubeconfig.KubeconfigError as exc:
            raise HubError(str(exc)) from None
        if loaded.exec is not None:
            raise HubError(f"{loaded.source}: user {loaded.user!r}: exec users are not supported")
        self.server: str = loaded.server.rstrip("/")
        self.ca: bytes | None = loaded.ca_data
        self.cert = loaded.client_cert_data
        self.key = loaded.client_key_data
        self.token = loaded.token
        self.proxy_url = loaded.proxy_url
        self.tls_server_name = loaded.tls_server_name
        self.insecure = loaded.insecure_skip_tls_verify
        # In a pod the plugin finds its namespace after $POD_NAMESPACE (secretreader's order).
        self.namespace_hint = loaded.namespace if loaded.source != "in-cluster" else None

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context with the hub's CA (in memory) and client certificate, if any."""
        import ssl  # here, not above: ``--help`` and argument errors never connect

        ctx = ssl.create_default_context(cadata=self.ca.decode() if self.ca else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert and self.key:
            # load_cert_chain needs files: a private 0700 directory, a 0600 key file, both
            # removed at once (tempfile is not used: it costs more to import than this).
            base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
            tmp = os.path.join(base, f"ci-sr-{os.getpid()}-{os.urandom(8).hex()}")
            os.mkdir(tmp, 0o700)
            cert_path, key_path = os.path.join(tmp, "c"), os.path.join(tmp, "k")
            try:
                for path, data in ((cert_path, self.cert), (key_path, self.key)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(data)
                ctx.load_cert_chain(cert_path, key_path)
            finally:
                for path in (cert_path, key_path):
                    if os.path.exists(path):
                        os.unlink(path)
                os.rmdir(tmp)
        return ctx

    def get_json(
        self, path: str, *, user_agent: str, timeout: float | None = None
    ) -> tuple[int, bytes]:
        """GET ``path`` (``/api/...``, already encoded) from the hub; returns (status, body).

        ``timeout`` (seconds, per connect and per read) defaults to :func:`request_timeout`:
        the one client timeout, as the CLI's (``docs/cli.md``, Timeouts).

        Raises:
            HubTimeoutError: No answer within ``timeout``.
            HubError: The server URL is not https, or the connection or TLS failed.
        """
        timeout = request_timeout() if timeout is None else timeout
        host, port, prefix = _split_server(self.server)
        headers = {"Accept": "application/json", "User-Agent": user_agent}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            return https_get(
                host,
                port,
                prefix + path,
                headers,
                context=self.ssl_context(),
                server_name=self.tls_server_name,
                timeout=timeout,
                proxy_url=self.proxy_url,
            )
        except TimeoutError:
            raise HubTimeoutError(
                f"{self.server} unreachable: no answer within {timeout:g} s"
            ) from None
        except OSError as exc:  # ssl.SSLError included
            raise HubError(f"hub {self.server}: {exc}") from None
