"""kubernetes_asyncio's REST and API clients, built around a caller-supplied TLS context.

The transport under :func:`cluster_inventory.kube.new_client`: one aiohttp session per client
(no cookie jar, the proxy resolved once), a bearer token fetched per request from a token
source, and one retry after a 401 with a refreshed credential. Every request any client of
ours sends passes here, so client-go's ``rest_client_*`` metrics are counted here
(:class:`~cluster_inventory.kube._metrics.RestClientMetrics`).

A client can open its first connection before it has a credential
(:meth:`_RESTClient.start_connecting`): the TCP connect and TLS handshake of a bearer-token
client need nothing from the exec plugin, so they run while the plugin does, and the first
request takes that connection from the pool.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from cluster_inventory.kube._k8s import ApiClient, ApiException
from cluster_inventory.kube._k8s import rest as _rest
from cluster_inventory.kube._metrics import RestClientMetrics
from cluster_inventory.kube._proxy import proxy_connector
from cluster_inventory.kube._tasks import TaskSet
from cluster_inventory.kube._timeout import request_timeout

__all__ = ["TokenSource", "UnauthorizedHook"]

_log = logging.getLogger(__name__)

#: An async callable returning a bearer token, called before each request (for exec creds).
TokenSource = Callable[[], Awaitable[str]]
#: An async callable told that the server answered 401 to the token it was given.
UnauthorizedHook = Callable[[str], Awaitable[None]]


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
        keepalive_timeout: float = 15.0,
    ) -> None:
        self.server_hostname = configuration.tls_server_name
        self.ssl_context = ssl_context
        self.keepalive_timeout = keepalive_timeout
        self.proxy, connector = proxy_connector(
            configuration.proxy,
            limit=configuration.connection_pool_maxsize,
            ssl=ssl_context,
            keepalive_timeout=keepalive_timeout,
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
        # client-go's `host` label is the URL's host:port; every request of a client has one.
        self._host = urlsplit(configuration.host).netloc
        self._origin = configuration.host
        self._metrics = RestClientMetrics.for_registry()
        self._tasks = TaskSet(f"client {self._host}", logger=_log)
        self._connecting: asyncio.Task[None] | None = None

    def start_connecting(self) -> None:
        """Open the first connection to the server now, before any request needs it.

        For a client whose credential is still being fetched (an exec plugin running): the
        TCP connect and TLS handshake go on meanwhile, and the first request waits for them
        instead of opening a second connection. A bearer token travels in a header, so the
        handshake does not need it; a client certificate is part of the TLS context, so a
        client for one is built (and connects) only once the plugin has answered
        (:func:`cluster_inventory.credentials.connect_access`). Through an HTTP(S) proxy
        the tunnel is the first request's to open (nothing is started). The connect is
        bounded by the one client timeout (``kube._timeout.request_timeout``), and a
        request waits for it no longer than its own ``_request_timeout`` lets it connect,
        then connects itself. A failure is only logged (debug): the first request connects
        again and reports its own error.
        """
        if self._connecting is None and not self.proxy:
            self._connecting = self._tasks.spawn(self._connect_ahead(), name="connect")

    async def _connect_ahead(self) -> None:
        session = self.pool_manager
        connector = session.connector
        assert connector is not None  # the session was given one and owns it
        # The request that will reuse the connection is built by kubernetes_asyncio with
        # these same settings (no per-request ssl, server_hostname from tls-server-name):
        # the same pool key.
        probe = aiohttp.ClientRequest(
            "GET",
            URL(self._origin),
            loop=asyncio.get_running_loop(),
            session=session,
            server_hostname=self.server_hostname or None,  # it passes only a non-empty one
        )
        timeout = aiohttp.ClientTimeout(total=None, connect=request_timeout())
        try:
            connection = await connector.connect(probe, [], timeout)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            _log.debug("connecting ahead to %s failed: %s", self._host, exc)
            return
        connection.release()  # into the pool, for the first request

    async def close(self) -> None:
        """Stop connecting ahead and close the session."""
        await self._tasks.stop()
        await super().close()

    async def request(  # type: ignore[no-untyped-def]
        self, method, url, query_params=None, headers=None, body=None, **kwargs
    ):
        """Send one request; after a 401, refresh the credential and send it once more."""
        connecting = self._connecting
        if connecting is not None:
            if not connecting.done():
                # No longer than this request would wait to connect (then it connects
                # itself); cancelling it must not cancel the connection others will use.
                await asyncio.wait([connecting], timeout=_connect_budget(kwargs))
            self._connecting = None

        async def send(sent_headers: Any) -> Any:
            start = time.monotonic()
            code: int | None = None
            try:
                response = await super(_RESTClient, self).request(
                    method,
                    url,
                    query_params=query_params,
                    headers=sent_headers,
                    body=body,
                    **kwargs,
                )
            except ApiException as exc:
                code = exc.status
                raise
            else:
                code = getattr(response, "status", None)
                return response
            finally:
                self._metrics.observe(method.upper(), self._host, code, time.monotonic() - start)

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


def _connect_budget(kwargs: dict[str, Any]) -> float | None:
    """Seconds a request may spend connecting, from kubernetes_asyncio's ``_request_timeout``.

    A number is the whole request's, a pair is ``(connect, read)``, a ``ClientTimeout`` says
    it itself; None: no bound of the request's own.
    """
    timeout = kwargs.get("_request_timeout")
    if isinstance(timeout, int | float):
        return float(timeout)
    if isinstance(timeout, tuple) and timeout:
        return float(timeout[0])
    if isinstance(timeout, aiohttp.ClientTimeout):
        bound = timeout.connect or timeout.sock_connect or timeout.total
        return float(bound) if bound else None
    return None


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
