"""The one client factory: kubernetes_asyncio ``ApiClient`` objects built without globals.

kubernetes_asyncio's own loaders mutate a process-wide default ``Configuration`` and turn
every ``*-data`` field into a temp file that lives until exit; a process that talks to many
clusters wants neither. Here a kubeconfig (file or dict) or in-memory connection details
become a :class:`ClusterConnection`, and :func:`new_client` builds an ``ApiClient`` whose TLS
context holds the CA in memory. A client key has to pass through a file for
``ssl.load_cert_chain``: it is written 0600 into a private directory and unlinked at once.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from cluster_inventory import _yaml
from cluster_inventory.kube._k8s import ApiClient, ApiException, Configuration
from cluster_inventory.kube._k8s import rest as _rest
from cluster_inventory.kube.errors import KubeConfigError

__all__ = [
    "ClusterConnection",
    "TokenSource",
    "UnauthorizedHook",
    "connection_from_in_cluster",
    "connection_from_kubeconfig",
    "new_client",
    "ssl_context_for",
]

#: An async callable returning a bearer token, called before each request (for exec creds).
TokenSource = Callable[[], Awaitable[str]]
#: An async callable told that the server answered 401 to the token it was given.
UnauthorizedHook = Callable[[str], Awaitable[None]]

_IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True, kw_only=True)
class ClusterConnection:
    """Everything needed to reach one kube-apiserver, held in memory.

    Attributes:
        server: Base URL, e.g. ``https://127.0.0.1:6443``.
        ca_data: PEM bytes of the CA bundle that signs the serving certificate, or None to
            use the system trust store.
        token: Static bearer token (never logged; excluded from ``repr``).
        client_cert_data: PEM client certificate.
        client_key_data: PEM client key (excluded from ``repr``).
        tls_server_name: Name to verify the serving certificate against, if not the host.
        insecure_skip_tls_verify: Skip verification of the serving certificate.
        proxy_url: Explicit proxy; when None, ``HTTPS_PROXY``/``NO_PROXY`` apply as in client-go.
        namespace: The kubeconfig context's namespace, if any (not used for connecting).
        name: A label for errors and logs (cluster or context name).
    """

    server: str
    ca_data: bytes | None = None
    token: str | None = field(default=None, repr=False)
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = field(default=None, repr=False)
    tls_server_name: str | None = None
    insecure_skip_tls_verify: bool = False
    proxy_url: str | None = None
    namespace: str | None = None
    name: str = ""


def _b64(value: str, where: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, TypeError) as exc:
        raise KubeConfigError(f"{where} is not valid base64") from exc


def _data_or_file(
    entry: Mapping[str, Any], key: str, base_dir: Path | None, where: str
) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return _b64(str(data), f"{where}.{key}-data")
    path = entry.get(key)
    if path:
        resolved = Path(str(path))
        if not resolved.is_absolute() and base_dir is not None:
            resolved = base_dir / resolved
        try:
            return resolved.read_bytes()
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            problem = getattr(exc, "strerror", None) or "not a file name"
            raise KubeConfigError(f"{where}.{key}: cannot read {resolved}: {problem}") from exc
    return None


def _named(items: Any, name: str, kind: str, source: str) -> Mapping[str, Any]:
    if not isinstance(items, list):
        raise KubeConfigError(f"{source}: {kind} must be a list")
    for item in items:
        if isinstance(item, Mapping) and item.get("name") == name:
            body = item.get(kind[:-1])
            if not isinstance(body, Mapping):
                raise KubeConfigError(f"{source}: {kind}[name={name}].{kind[:-1]} is missing")
            return body
    raise KubeConfigError(f"{source}: no entry named {name!r} in {kind}")


def connection_from_kubeconfig(
    kubeconfig: str | os.PathLike[str] | Mapping[str, Any],
    *,
    context: str | None = None,
    inline_only: bool = False,
) -> ClusterConnection:
    """Read a kubeconfig file or dict into a :class:`ClusterConnection`.

    Supports CA, client certificate and key as ``*-data`` or file paths (relative to the
    file), ``token`` and ``tokenFile``, ``tls-server-name``, ``insecure-skip-tls-verify``
    and ``proxy-url``. Exec and auth-provider users are refused here: the exec path with
    cluster info and caching lives in ``cluster_inventory.credentials``.

    Args:
        kubeconfig: A path, or an already parsed kubeconfig mapping.
        context: Context to use; defaults to ``current-context``.
        inline_only: Refuse file references (``tokenFile``, ``certificate-authority``,
            ``client-certificate``, ``client-key``): a kubeconfig someone else wrote (a
            registration Secret) must not make this process read its own files (its
            service account token) and send them to a server of their choosing.

    Returns:
        The connection details, held in memory.

    Raises:
        KubeConfigError: The file is unreadable or malformed; the message names the file and
            the field.
    """
    base_dir: Path | None = None
    if isinstance(kubeconfig, Mapping):
        source = "kubeconfig"
        doc: Any = kubeconfig
    else:
        path = Path(kubeconfig)
        source = str(path)
        base_dir = path.parent
        try:
            doc = _yaml.load(path.read_text())
        except OSError as exc:
            raise KubeConfigError(f"{source}: cannot read: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise KubeConfigError(f"{source}: {_yaml.describe(exc)}") from exc
    if not isinstance(doc, Mapping):
        raise KubeConfigError(f"{source}: not a kubeconfig mapping")
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise KubeConfigError(f"{source}: current-context is empty and no context was given")
    ctx = _named(doc.get("contexts"), str(ctx_name), "contexts", source)
    cluster_name = str(ctx.get("cluster", ""))
    cluster = _named(doc.get("clusters"), cluster_name, "clusters", source)
    user_name = ctx.get("user")
    user: Mapping[str, Any] = (
        _named(doc.get("users"), str(user_name), "users", source) if user_name else {}
    )
    where_c = f"{source}: clusters[name={cluster_name}].cluster"
    where_u = f"{source}: users[name={user_name}].user"
    server = cluster.get("server")
    if not server:
        raise KubeConfigError(f"{where_c}.server is missing")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeConfigError(f"{where_c}.server must be an https:// or http:// URL")
    for entry, where, text_field in (
        (cluster, where_c, "tls-server-name"),
        (cluster, where_c, "proxy-url"),
        (user, where_u, "token"),
        (ctx, f"{source}: contexts[name={ctx_name}].context", "namespace"),
    ):
        if entry.get(text_field) is not None and not isinstance(entry[text_field], str):
            raise KubeConfigError(f"{where}.{text_field} must be a string")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool | None):
        # bool("false") is True: a quoted value must not turn verification off.
        raise KubeConfigError(f"{where_c}.insecure-skip-tls-verify must be true or false")
    if inline_only:
        for entry, where, file_field, inline in (
            (cluster, where_c, "certificate-authority", "certificate-authority-data"),
            (user, where_u, "tokenFile", "token"),
            (user, where_u, "client-certificate", "client-certificate-data"),
            (user, where_u, "client-key", "client-key-data"),
        ):
            if entry.get(file_field) and not entry.get(inline):
                raise KubeConfigError(
                    f"{where}.{file_field}: a file reference is not allowed here; use {inline} "
                    "(kubectl config view --flatten --minify inlines the files)"
                )
    if "exec" in user or "auth-provider" in user:
        kind = "exec" if "exec" in user else "auth-provider"
        raise KubeConfigError(
            f"{where_u}.{kind}: not supported by the plain client factory; use "
            "cluster_inventory.credentials for exec credentials"
        )
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token_path = Path(str(user["tokenFile"]))
        if not token_path.is_absolute() and base_dir is not None:
            token_path = base_dir / token_path
        try:
            token = token_path.read_text().strip()
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            raise KubeConfigError(f"{where_u}.tokenFile: cannot read {token_path}") from exc
    cert = _data_or_file(user, "client-certificate", base_dir, where_u)
    key = _data_or_file(user, "client-key", base_dir, where_u)
    if (cert is None) != (key is None):
        raise KubeConfigError(f"{where_u}: client-certificate and client-key must come together")
    return ClusterConnection(
        server=str(server),
        ca_data=_data_or_file(cluster, "certificate-authority", base_dir, where_c),
        token=str(token) if token else None,
        client_cert_data=cert,
        client_key_data=key,
        tls_server_name=cluster.get("tls-server-name") or None,
        insecure_skip_tls_verify=bool(insecure),
        proxy_url=cluster.get("proxy-url") or None,
        namespace=ctx.get("namespace") or None,
        name=str(ctx_name),
    )


def connection_from_in_cluster() -> ClusterConnection:
    """Build the connection of a pod: ``KUBERNETES_SERVICE_HOST/PORT`` and the mounted token.

    Raises:
        KubeConfigError: Not running in a pod (variables or files absent).
    """
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError(
            "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"
        )
    try:
        token = (_IN_CLUSTER_DIR / "token").read_text().strip()
        ca = (_IN_CLUSTER_DIR / "ca.crt").read_bytes()
    except OSError as exc:
        raise KubeConfigError(f"in-cluster config: cannot read {exc.filename}") from exc
    namespace_file = _IN_CLUSTER_DIR / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.exists() else None
    if ":" in host:
        host = f"[{host}]"
    return ClusterConnection(
        server=f"https://{host}:{port}",
        ca_data=ca,
        token=token,
        namespace=namespace,
        name="in-cluster",
    )


def ssl_context_for(conn: ClusterConnection) -> ssl.SSLContext:
    """Build a TLS client context for ``conn`` with the CA kept in memory.

    Raises:
        KubeConfigError: The CA or client certificate cannot be loaded.
    """
    try:
        if conn.ca_data:
            ctx = ssl.create_default_context(cadata=conn.ca_data.decode())
        else:
            ctx = ssl.create_default_context()
    except (ssl.SSLError, UnicodeDecodeError) as exc:
        raise KubeConfigError(f"{conn.name or conn.server}: CA data is not a PEM bundle") from exc
    if conn.insecure_skip_tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if conn.client_cert_data and conn.client_key_data:
        with tempfile.TemporaryDirectory(prefix="ci-tls-") as tmp:
            cert_path = Path(tmp) / "client.crt"
            key_path = Path(tmp) / "client.key"
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(conn.client_key_data)
            cert_path.write_bytes(conn.client_cert_data)
            try:
                ctx.load_cert_chain(cert_path, key_path)
            except ssl.SSLError as exc:
                raise KubeConfigError(
                    f"{conn.name or conn.server}: client certificate and key do not load"
                ) from exc
            finally:
                key_path.unlink()
    return ctx


class _RESTClient(_rest.RESTClientObject):  # type: ignore[misc]
    """kubernetes_asyncio's REST client with a caller-supplied TLS context.

    With a token source and an unauthorized hook, a 401 answer is reported to the hook (which
    drops the cached credential) and the request is sent once more with a fresh token. client-go
    re-runs the exec plugin after a 401 but hands the 401 back; retrying once spares every
    caller from writing that loop.
    """

    def __init__(
        self,
        configuration: Any,
        ssl_context: ssl.SSLContext,
        trust_env: bool,
        token_source: TokenSource | None = None,
        on_unauthorized: UnauthorizedHook | None = None,
    ) -> None:
        self.server_hostname = configuration.tls_server_name
        self.proxy = configuration.proxy
        self.proxy_headers = configuration.proxy_headers
        self.pool_manager = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=configuration.connection_pool_maxsize, ssl=ssl_context
            ),
            trust_env=trust_env,
            read_bufsize=2**21,
        )
        self._token_source = token_source
        self._on_unauthorized = on_unauthorized

    async def request(  # type: ignore[no-untyped-def]
        self, method, url, query_params=None, headers=None, body=None, **kwargs
    ):
        """Send one request; after a 401, refresh the credential and send it once more."""

        def send(sent_headers: Any) -> Any:
            return super(_RESTClient, self).request(
                method, url, query_params=query_params, headers=sent_headers, body=body, **kwargs
            )

        if self._token_source is None or self._on_unauthorized is None:
            return await send(headers)
        try:
            response = await send(headers)
        except ApiException as exc:
            if exc.status != 401:
                raise
        else:
            if getattr(response, "status", None) != 401:
                return response
            response.release()
        others = {k: v for k, v in (headers or {}).items() if k.lower() != "authorization"}
        refused = next(
            (str(v) for k, v in (headers or {}).items() if k.lower() == "authorization"), ""
        )
        await self._on_unauthorized(refused.removeprefix("Bearer "))
        return await send({**others, "Authorization": f"Bearer {await self._token_source()}"})


class _ApiClient(ApiClient):  # type: ignore[misc]
    """An ``ApiClient`` built around our REST client from the start.

    kubernetes_asyncio's ``ApiClient.__init__`` always builds a REST client of its own: an
    aiohttp session and an SSL context loaded with the whole system CA bundle
    (``ssl.create_default_context()``), which ``new_client`` replaced and closed at once.
    With one client per engaged member that was over half of the runtime's CPU while
    engaging (py-spy, docs/benchmarks.md). This sets the attributes the parent's
    ``__init__`` sets (a unit test compares them), without that REST client.
    """

    def __init__(self, configuration: Any, rest_client: Any) -> None:
        self.configuration = configuration
        self.pool_threads = 1
        self.rest_client = rest_client
        self.default_headers: dict[str, str] = {}
        self.cookie = None
        self.user_agent = "OpenAPI-Generator/kubernetes_asyncio/python (cluster-inventory)"
        self.client_side_validation = configuration.client_side_validation


def environment_proxy(server: str) -> str | None:
    """The proxy ``HTTPS_PROXY`` and ``NO_PROXY`` give for ``server``.

    As client-go's ``http.ProxyFromEnvironment``, through :func:`urllib.request.getproxies`.

    Args:
        server: The apiserver URL.

    Returns:
        The proxy URL, or None when none is set or ``NO_PROXY`` covers the host.
    """
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    proxy = getproxies().get(urlsplit(server).scheme or "https")
    host = urlsplit(server).hostname or ""
    if not proxy or proxy_bypass(host):
        return None
    return str(proxy)


async def new_client(
    conn: ClusterConnection,
    *,
    token_source: TokenSource | None = None,
    on_unauthorized: UnauthorizedHook | None = None,
) -> ApiClient:
    """Build a kubernetes_asyncio ``ApiClient`` for ``conn``; close it with ``await .close()``.

    Must be called inside a running event loop (aiohttp sessions bind to it). The library's
    global default configuration is never read or written.

    Args:
        conn: Where and how to connect.
        token_source: Optional async callable returning a bearer token; it is awaited before
            every request (this is how exec credentials plug in). Takes precedence over
            ``conn.token``.
        on_unauthorized: Optional async callable given the token a 401 answer refused; it
            should drop that credential so that ``token_source`` yields a new one. With both
            callables set, a request refused with 401 is sent once more with the new token.

    Returns:
        A ready ``ApiClient``.

    Raises:
        KubeConfigError: The TLS material does not load.
    """
    ctx = ssl_context_for(conn)
    config = Configuration(host=conn.server.rstrip("/"))
    config.tls_server_name = conn.tls_server_name
    config.verify_ssl = not conn.insecure_skip_tls_verify
    proxy = conn.proxy_url or environment_proxy(conn.server)
    if proxy:
        config.proxy = proxy
    if token_source is not None:

        async def refresh(cfg: Any) -> None:
            cfg.api_key["BearerToken"] = f"Bearer {await token_source()}"

        config.refresh_api_key_hook = refresh
        config.api_key["BearerToken"] = "Bearer "
    elif conn.token:
        config.api_key["BearerToken"] = f"Bearer {conn.token}"
    rest_client = _RESTClient(
        config,
        ctx,
        # The environment's proxy was resolved once above. aiohttp's trust_env would redo it
        # and read ~/.netrc in a worker thread on every request: a thread hop per request.
        trust_env=False,
        token_source=token_source,
        on_unauthorized=on_unauthorized,
    )
    return _ApiClient(config, rest_client)
