"""The one client factory: kubernetes_asyncio ``ApiClient`` objects built without globals.

kubernetes_asyncio's own loaders mutate a process-wide default ``Configuration`` and turn
every ``*-data`` field into a temp file that lives until exit; a process that talks to many
clusters wants neither. Here a kubeconfig (file or dict) or in-memory connection details
become a :class:`ClusterConnection`, and :func:`new_client` builds an ``ApiClient`` whose TLS
context holds the CA in memory. A client key has to pass through a file for
``ssl.load_cert_chain``: it is written 0600 into a private directory and unlinked at once.
"""

from __future__ import annotations

import functools
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from cluster_inventory import kubeconfig
from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.kube._k8s import ApiClient, ApiException, Configuration
from cluster_inventory.kube._k8s import rest as _rest
from cluster_inventory.kube.errors import KubeConfigError

if TYPE_CHECKING:
    from aiohttp_socks import ProxyConnector

__all__ = [
    "ClusterConnection",
    "SocksProxyError",
    "TokenSource",
    "UnauthorizedHook",
    "clone_client",
    "connection_from_in_cluster",
    "connection_from_kubeconfig",
    "load_connection",
    "new_client",
    "shared_ssl_context",
    "ssl_context_for",
]

#: An async callable returning a bearer token, called before each request (for exec creds).
TokenSource = Callable[[], Awaitable[str]]
#: An async callable told that the server answered 401 to the token it was given.
UnauthorizedHook = Callable[[str], Awaitable[None]]


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
        exec_user: A kubeconfig exec user (``users[].user.exec``), run by
            :func:`cluster_inventory.credentials.hub_client`; :func:`new_client` refuses it.
        exec_cluster_config: The cluster's ``client.authentication.k8s.io/exec`` extension,
            handed to that plugin as ``spec.cluster.config``.
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
    exec_user: Mapping[str, Any] | None = field(default=None, repr=False, hash=False)
    exec_cluster_config: Any = field(default=None, repr=False, hash=False)


def _from_loaded(loaded: kubeconfig.Kubeconfig, *, allow_exec: bool) -> ClusterConnection:
    if loaded.exec is not None and not allow_exec:
        raise KubeConfigError(
            f"{loaded.source}: users[name={loaded.user}].user.exec: not supported here; "
            "use cluster_inventory.credentials for exec credentials"
        )
    exec_config = next(
        (e.get("extension") for e in loaded.cluster_extensions if e.get("name") == EXTENSION_EXEC),
        None,
    )
    return ClusterConnection(
        server=loaded.server,
        ca_data=loaded.ca_data,
        token=loaded.token,
        client_cert_data=loaded.client_cert_data,
        client_key_data=loaded.client_key_data,
        tls_server_name=loaded.tls_server_name,
        insecure_skip_tls_verify=loaded.insecure_skip_tls_verify,
        proxy_url=loaded.proxy_url,
        namespace=loaded.namespace,
        name=loaded.context or loaded.source,
        exec_user=loaded.exec,
        exec_cluster_config=exec_config if loaded.exec is not None else None,
    )


def connection_from_kubeconfig(
    kubeconfig_source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    context: str | None = None,
    inline_only: bool = False,
) -> ClusterConnection:
    """Read one kubeconfig file or dict into a :class:`ClusterConnection`.

    For a registration's or a test fleet's kubeconfig, which is one document; a process
    finding its own hub uses :func:`load_connection` (kubectl's search rules). Supports CA,
    client certificate and key as ``*-data`` or file paths (relative to the file),
    ``token`` and ``tokenFile``, ``tls-server-name``, ``insecure-skip-tls-verify`` and
    ``proxy-url``. Exec and auth-provider users are refused: the manager holds no plugin for
    a member, and a consumer's exec path lives in ``cluster_inventory.credentials``.

    Args:
        kubeconfig_source: A path, or an already parsed kubeconfig mapping.
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
    try:
        if isinstance(kubeconfig_source, Mapping):
            loaded = kubeconfig.from_document(
                kubeconfig_source, context=context, inline_only=inline_only
            )
        else:
            loaded = kubeconfig.load(kubeconfig_source, context=context)
    except kubeconfig.KubeconfigError as exc:
        raise KubeConfigError(str(exc)) from None
    return _from_loaded(loaded, allow_exec=False)


def load_connection(
    path: str | os.PathLike[str] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClusterConnection:
    """The hub connection kubectl would use: ``--kubeconfig``, ``$KUBECONFIG``, in-cluster, home.

    The rules are :mod:`cluster_inventory.kubeconfig`'s (client-go's loading rules in
    controller-runtime's order). An exec user is kept in ``exec_user``: build the client with
    :func:`cluster_inventory.credentials.hub_client`, which runs the plugin.

    Args:
        path: ``--kubeconfig`` (only that file, which must exist).
        context: ``--context``.
        environ: The environment (default ``os.environ``).

    Returns:
        The connection details.

    Raises:
        KubeConfigError: Nothing found, or the configuration found is invalid (names the
            file and field).
    """
    try:
        loaded = kubeconfig.load(path, context=context, environ=environ)
    except kubeconfig.KubeconfigError as exc:
        raise KubeConfigError(str(exc)) from None
    return _from_loaded(loaded, allow_exec=True)


def connection_from_in_cluster() -> ClusterConnection:
    """Build the connection of a pod: ``KUBERNETES_SERVICE_HOST/PORT`` and the mounted token.

    Raises:
        KubeConfigError: Not running in a pod (variables or files absent).
    """
    try:
        loaded = kubeconfig.in_cluster()
    except kubeconfig.KubeconfigError as exc:
        raise KubeConfigError(str(exc)) from None
    if loaded is None:
        raise KubeConfigError(
            "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"
        )
    return _from_loaded(loaded, allow_exec=False)


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


#: TLS material -> the context built from it, shared by every client with that material.
_SHARED_CONTEXTS: dict[tuple[bytes | None, bytes | None, bytes | None, bool], ssl.SSLContext] = {}
#: Contexts kept at most (the oldest goes first); a fleet has a few CAs and credentials.
_SHARED_CONTEXTS_MAX = 256


def shared_ssl_context(conn: ClusterConnection) -> ssl.SSLContext:
    """The TLS client context for ``conn``, shared with every connection of the same material.

    A context loads its CA bundle and client key once; members registered with the same CA
    and client credential (a fleet issued by one CA, a cluster manager with one identity)
    share one instead of building one each: at thousands of members, the contexts were a
    sixth of a replica's start-up CPU and a large part of its memory (``docs/scale.md``).
    The context is never changed after it is built (the server name is given per request),
    so sharing it among clients and threads is safe. Callers must not change it either; one
    that wants its own uses :func:`ssl_context_for`.

    Raises:
        KubeConfigError: The CA or client certificate cannot be loaded.
    """
    key = (
        conn.ca_data,
        conn.client_cert_data,
        conn.client_key_data,
        conn.insecure_skip_tls_verify,
    )
    ctx = _SHARED_CONTEXTS.get(key)
    if ctx is None:
        ctx = ssl_context_for(conn)
        if len(_SHARED_CONTEXTS) >= _SHARED_CONTEXTS_MAX:
            _SHARED_CONTEXTS.pop(next(iter(_SHARED_CONTEXTS)))
        _SHARED_CONTEXTS[key] = ctx
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
        self.ssl_context = ssl_context
        self.proxy, connector = proxy_connector(
            configuration.proxy, limit=configuration.connection_pool_maxsize, ssl=ssl_context
        )
        self.proxy_headers = configuration.proxy_headers
        # No cookie jar, as client-go's http.Client: the Kubernetes API sets no cookies, and
        # building aiohttp's jar alone was 2% of a replica's CPU while it started 1,000
        # members, one client each (py-spy); it also filtered every request.
        self.pool_manager = aiohttp.ClientSession(
            connector=connector,
            trust_env=trust_env,
            read_bufsize=2**21,
            cookie_jar=aiohttp.DummyCookieJar(),
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


#: ``proxy-url`` schemes (the v1alpha2 ClusterProfile's CEL rule, client-go's transport).
PROXY_SCHEMES = ("http", "https", "socks5")


def proxy_connector(
    proxy_url: str | None, *, limit: int, ssl: ssl.SSLContext
) -> tuple[str | None, aiohttp.TCPConnector]:
    """The aiohttp connector (and per-request proxy) that reach a server through ``proxy_url``.

    As client-go's transport (``http.Transport.Proxy`` with ``golang.org/x/net/proxy``):
    ``http``/``https`` proxies get an HTTP CONNECT tunnel from aiohttp itself (TLS to an
    ``https`` proxy, then TLS to the server inside it), and ``socks5`` goes through
    aiohttp-socks, which hands host names to the proxy unresolved as Go's SOCKS5 dialer does.
    One connector serves every request of a client, so the tunnels are pooled like direct
    connections.

    Args:
        proxy_url: The proxy, or None to connect directly.
        limit: Connections the pool keeps open at most.
        ssl: TLS context for the server (not for an ``https`` proxy: that uses the system
            trust store).

    Returns:
        ``(proxy for each request or None, connector)``.

    Raises:
        KubeConfigError: The URL's scheme is none of http, https and socks5, or it has no
            host or a bad port.
    """
    if not proxy_url:
        return None, aiohttp.TCPConnector(limit=limit, ssl=ssl)
    from urllib.parse import urlsplit

    parts = urlsplit(proxy_url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in PROXY_SCHEMES or not parts.hostname or port == -1:
        raise KubeConfigError(
            f"proxy-url {_redact(proxy_url)!r}: must be a URL with scheme http, https or "
            "socks5 and a host"
        )
    if parts.scheme != "socks5":
        return proxy_url, aiohttp.TCPConnector(limit=limit, ssl=ssl)
    from aiohttp_socks import ProxyType

    connector = _socks_connector()(
        proxy_type=ProxyType.SOCKS5,
        host=parts.hostname,
        port=port or 1080,
        username=parts.username,
        password=parts.password,
        rdns=True,
        limit=limit,
        ssl=ssl,
    )
    return None, connector


class SocksProxyError(aiohttp.ClientConnectionError):
    """A ``socks5`` proxy-url could not be reached, timed out, or refused the tunnel.

    aiohttp-socks raises its own exceptions, which are neither ``OSError`` nor aiohttp's:
    every caller that handles an unreachable server (and an HTTP proxy that is down, which
    aiohttp reports as a ``ClientConnectionError``) let them through as a traceback. This is
    an ``aiohttp.ClientConnectionError``, so a SOCKS proxy that is down is an unreachable
    server like any other. The message names the proxy (never its password) and the target.
    """


@functools.cache
def _socks_connector() -> type[ProxyConnector]:
    """aiohttp-socks' connector, its failures raised as :class:`SocksProxyError`.

    Built on first use: aiohttp-socks is imported only for a socks5 proxy-url.
    """
    from aiohttp_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError
    from aiohttp_socks import ProxyConnector as Base

    class SocksConnector(Base):
        async def _wrap_create_connection(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super()._wrap_create_connection(*args, **kwargs)
            except (ProxyConnectionError, ProxyTimeoutError, ProxyError) as exc:
                proxy = f"socks5://{self._proxy_host}:{self._proxy_port}"
                kind = "timed out" if isinstance(exc, ProxyTimeoutError) else "failed"
                raise SocksProxyError(f"socks5 proxy {proxy} {kind}: {exc}") from None

    return SocksConnector


def _redact(url: str) -> str:
    """``url`` without a password (a proxy's user info may carry one)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


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
        KubeConfigError: The TLS material does not load, the ``proxy-url`` is not an http,
            https or socks5 URL, or the user is an exec plugin and no ``token_source`` is
            given.
    """
    if conn.exec_user is not None and token_source is None:
        raise KubeConfigError(
            f"{conn.name or conn.server}: the user is an exec plugin; build the client with "
            "cluster_inventory.credentials.hub_client, which runs it"
        )
    ctx = shared_ssl_context(conn)
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


async def clone_client(client: ApiClient) -> ApiClient:
    """A new client reaching the same server as ``client``, bound to the running event loop.

    An aiohttp session belongs to the loop it was made in; work that runs on a loop of its
    own (Lease renewals, :mod:`cluster_inventory.kube.background`) needs its own session to the
    same hub. The clone shares the TLS context and credential of ``client``; a credential
    refreshed per request (exec plugins) is still refreshed by the original's token source,
    run on the loop that owns it.

    Args:
        client: A client made by :func:`new_client` (or ``credentials.hub_client``).

    Returns:
        A new client; close it with ``await .close()`` on the loop that made it.

    Raises:
        TypeError: ``client`` was not made by :func:`new_client`.
    """
    import asyncio
    import copy

    rest = client.rest_client
    if not isinstance(rest, _RESTClient):
        raise TypeError("clone_client needs a client made by kube.new_client")
    config = copy.copy(client.configuration)
    config.api_key = dict(client.configuration.api_key)
    token_source: TokenSource | None = rest._token_source
    hook = client.configuration.refresh_api_key_hook
    if token_source is not None and hook is not None:
        origin = _client_loop(rest)
        source = token_source

        async def fetch() -> str:
            return await source()

        async def from_origin() -> str:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fetch(), origin))

        async def refresh(cfg: Any) -> None:
            cfg.api_key["BearerToken"] = f"Bearer {await from_origin()}"

        config.refresh_api_key_hook = refresh
        token_source = from_origin
    clone = _RESTClient(config, rest.ssl_context, trust_env=False, token_source=token_source)
    return _ApiClient(config, clone)


def _client_loop(rest: _RESTClient) -> Any:
    """The event loop a REST client's session belongs to."""
    return rest.pool_manager._loop
