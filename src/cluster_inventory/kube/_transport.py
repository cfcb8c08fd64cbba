"""kubernetes_asyncio's REST and API clients, built around a caller-supplied TLS context.

The transport under :func:`cluster_inventory.kube.new_client`: one aiohttp session per client
(no cookie jar, the proxy resolved once), a bearer token fetched per request from a token
source, and one retry after a 401 with a refreshed credential. Every request any client of
ours sends passes here, so client-go's ``rest_client_*`` metrics are counted here
(:class:`~cluster_inventory.kube._metrics.RestClientMetrics`).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from cluster_inventory.kube._k8s import ApiClient, ApiException
from cluster_inventory.kube._k8s import rest as _rest
from cluster_inventory.kube._metrics import RestClientMetrics
from cluster_inventory.kube._proxy import proxy_connector

__all__ = ["TokenSource", "UnauthorizedHook"]

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
        self._metrics = RestClientMetrics.for_registry()

    async def request(  # type: ignore[no-untyped-def]
        self, method, url, query_params=None, headers=None, body=None, **kwargs
    ):
        """Send one request; after a 401, refresh the credential and send it once more."""

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
