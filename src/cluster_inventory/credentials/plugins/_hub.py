"""A small HTTPS client for the hub, on the standard library only.

The exec plugins run once per credential fetch, and ``cluster-inventory get`` once per
command a person types, so their start-up is the product: importing aiohttp and
kubernetes_asyncio costs more than everything else they do. This reads a kubeconfig
(kubectl's YAML subset by a small parser, PyYAML only for anything else, or the in-cluster
service account), builds a TLS context with the CA kept in memory, and makes one HTTP/1.0
GET. Exec and auth-provider users are refused: callers fall back to
:mod:`cluster_inventory.kube`, which handles everything.
"""

from __future__ import annotations

import binascii
import json
import os
import socket
import ssl

TYPE_CHECKING = False  # typing costs a measurable share of a cold start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Hub", "HubError", "b64decode", "https_get", "quote", "read_file"]

_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class HubError(Exception):
    """The hub cannot be reached as configured; the message names the file or server."""


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


def _load_document(path: str) -> Any:
    text = read_file(path).decode()
    try:
        return json.loads(text)
    except ValueError:
        pass
    from cluster_inventory.credentials.plugins import _kubeconfig_yaml

    try:
        return _kubeconfig_yaml.load(text)
    except _kubeconfig_yaml.Unsupported:
        import yaml  # the full parser, only for kubeconfigs outside kubectl's subset

        return yaml.safe_load(text)


def _named(doc: Any, kind: str, name: str, source: str) -> dict[str, Any]:
    for item in doc.get(kind) or ():
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(kind[:-1])
            if isinstance(body, dict):
                return body
    raise HubError(f"{source}: no {kind[:-1]} named {name!r}")


def _file_or_data(entry: dict[str, Any], key: str, base: str) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return b64decode(str(data))
    path = entry.get(key)
    if path:
        return read_file(os.path.join(base, str(path)))
    return None


def https_get(
    host: str,
    port: int,
    path: str,
    headers: dict[str, str],
    *,
    context: ssl.SSLContext,
    server_name: str | None,
    timeout: float,
) -> tuple[int, bytes]:
    """One HTTP/1.0 GET over TLS; returns (status, body).

    http.client would pull in the email package, a large share of this plugin's cold start;
    HTTP/1.0 with ``Connection: close`` needs no chunked decoding or connection reuse.
    """
    lines = [f"GET {path} HTTP/1.0", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    with (
        socket.create_connection((host, port), timeout) as raw,
        context.wrap_socket(raw, server_hostname=server_name or host) as sock,
    ):
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    head, _, body = response.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise OSError("malformed HTTP response")
    return int(status_line[1]), body


class Hub:
    """Where the hub is and how to authenticate to it."""

    def __init__(self, opts: dict[str, str]) -> None:
        """Read the hub's address and credentials.

        Args:
            opts: ``kubeconfig`` (else ``$KUBECONFIG``'s first file, else the in-cluster
                service account) and ``context`` (else the current context).

        Raises:
            HubError: The kubeconfig is unreadable, names no usable cluster or context, or
                uses an exec or auth-provider user (this client does not run plugins).
        """
        self.namespace_hint: str | None = None
        self.token: str | None = None
        self.cert: bytes | None = None
        self.key: bytes | None = None
        self.tls_server_name: str | None = None
        self.proxy_url: str | None = None
        self.insecure = False
        kubeconfig = opts.get("kubeconfig") or os.environ.get("KUBECONFIG", "")
        paths = [p for p in kubeconfig.split(os.pathsep) if p]
        if paths:
            self._from_kubeconfig(paths[0], opts.get("context"))
        else:
            self._from_service_account()

    def _from_kubeconfig(self, path: str, context: str | None) -> None:
        source = path
        try:
            doc = _load_document(path)
        except OSError as exc:
            raise HubError(f"{source}: cannot read kubeconfig: {exc.strerror}") from None
        except Exception:  # any parser error means the same to the user
            raise HubError(f"{source}: kubeconfig is neither JSON nor YAML") from None
        if not isinstance(doc, dict):
            raise HubError(f"{source}: not a kubeconfig")
        ctx_name = context or doc.get("current-context")
        if not ctx_name:
            raise HubError(f"{source}: no current-context and no --context")
        ctx = _named(doc, "contexts", ctx_name, source)
        cluster = _named(doc, "clusters", str(ctx.get("cluster")), source)
        user = _named(doc, "users", str(ctx.get("user")), source) if ctx.get("user") else {}
        if not cluster.get("server"):
            raise HubError(f"{source}: cluster {ctx.get('cluster')!r} has no server")
        self.server = str(cluster["server"]).rstrip("/")
        base = os.path.dirname(os.path.abspath(path))
        try:
            self.ca = _file_or_data(cluster, "certificate-authority", base)
            self.cert = _file_or_data(user, "client-certificate", base)
            self.key = _file_or_data(user, "client-key", base)
            self.token = user.get("token")
            if not self.token and user.get("tokenFile"):
                self.token = read_file(os.path.join(base, str(user["tokenFile"]))).decode().strip()
        except (OSError, ValueError) as exc:
            raise HubError(f"{source}: cannot load TLS or token material: {exc}") from None
        if "exec" in user or "auth-provider" in user:
            raise HubError(f"{source}: user {ctx.get('user')!r}: exec users are not supported")
        self.proxy_url = cluster.get("proxy-url") or None  # read for callers; not applied here
        self.tls_server_name = cluster.get("tls-server-name")
        insecure = cluster.get("insecure-skip-tls-verify")
        if insecure is not None and not isinstance(insecure, bool):
            # bool("false") is True: a quoted value must not turn verification off.
            raise HubError(f"{source}: insecure-skip-tls-verify must be true or false")
        self.insecure = bool(insecure)
        self.namespace_hint = ctx.get("namespace") or None

    def _from_service_account(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise HubError(
                "no hub: set --kubeconfig or KUBECONFIG, or run in a pod with a service account"
            )
        if ":" in host:
            host = f"[{host}]"
        self.server = f"https://{host}:{port}"
        try:
            self.token = read_file(f"{_SA_DIR}/token").decode().strip()
            self.ca = read_file(f"{_SA_DIR}/ca.crt")
        except OSError as exc:
            raise HubError(f"in-cluster: cannot read {exc.filename}") from None

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context with the hub's CA (in memory) and client certificate, if any."""
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

    def get_json(self, path: str, *, user_agent: str, timeout: float = 30) -> tuple[int, bytes]:
        """GET ``path`` (``/api/...``, already encoded) from the hub; returns (status, body).

        Raises:
            HubError: The server URL is not https, or the connection or TLS failed.
        """
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
            )
        except (OSError, ssl.SSLError) as exc:
            raise HubError(f"hub {self.server}: {exc}") from None
