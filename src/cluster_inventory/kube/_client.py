"""The one client factory: kubernetes_asyncio ``ApiClient`` objects built without globals.

kubernetes_asyncio's own loaders mutate a process-wide default ``Configuration`` and turn
every ``*-data`` field into a temp file that lives until exit; a process that talks to many
clusters wants neither. Here a kubeconfig (file or dict) or in-memory connection details
become a :class:`ClusterConnection`, and :func:`new_client` builds an ``ApiClient`` whose TLS
context holds the CA in memory (:mod:`._tls`), over the transport of :mod:`._transport`.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any

from cluster_inventory import kubeconfig
from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.kube._connection import ClusterConnection
from cluster_inventory.kube._k8s import ApiClient, Configuration
from cluster_inventory.kube._proxy import environment_proxy
from cluster_inventory.kube._tls import shared_ssl_context
from cluster_inventory.kube._transport import (
    TokenSource,
    UnauthorizedHook,
    _ApiClient,
    _RESTClient,
)
from cluster_inventory.kube.errors import KubeConfigError

__all__ = [
    "clone_client",
    "connection_from_in_cluster",
    "connection_from_kubeconfig",
    "load_connection",
    "new_client",
]


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


async def new_client(
    conn: ClusterConnection,
    *,
    token_source: TokenSource | None = None,
    on_unauthorized: UnauthorizedHook | None = None,
    keepalive_timeout: float = 15.0,
    ssl_context: ssl.SSLContext | None = None,
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
        keepalive_timeout: Seconds an idle connection is kept for the next request
            (aiohttp's default, 15). Each kept TLS connection holds memory (its uvloop and
            OpenSSL state): a client whose next request comes later than that anyway (a
            member probed every 30 s) says so with a short one.
        ssl_context: The TLS context to use instead of the one shared by every connection
            with ``conn``'s material (a :class:`ReloadableTLSContext` for a client whose
            certificate rotates).

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
    ctx = ssl_context if ssl_context is not None else shared_ssl_context(conn)
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
        keepalive_timeout=keepalive_timeout,
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
    clone = _RESTClient(
        config,
        rest.ssl_context,
        trust_env=False,
        token_source=token_source,
        keepalive_timeout=rest.keepalive_timeout,
    )
    return _ApiClient(config, clone)


def _client_loop(rest: _RESTClient) -> Any:
    """The event loop a REST client's session belongs to."""
    return rest.pool_manager._loop
