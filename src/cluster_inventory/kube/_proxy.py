"""Reaching a kube-apiserver through a proxy, as client-go's transport does.

``proxy-url`` (http, https or socks5) becomes an aiohttp connector; without one,
``HTTPS_PROXY`` and ``NO_PROXY`` apply. aiohttp-socks is imported only for a socks5 proxy.
"""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp

from cluster_inventory.kube.errors import KubeConfigError

if TYPE_CHECKING:
    from aiohttp_socks import ProxyConnector

__all__ = ["PROXY_SCHEMES", "SocksProxyError", "environment_proxy", "proxy_connector"]


#: ``proxy-url`` schemes (the v1alpha2 ClusterProfile's CEL rule, client-go's transport).
PROXY_SCHEMES = ("http", "https", "socks5")


def proxy_connector(
    proxy_url: str | None, *, limit: int, ssl: ssl.SSLContext, keepalive_timeout: float = 15.0
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
        keepalive_timeout: Seconds an idle connection is kept for the next request
            (aiohttp's default, 15).

    Returns:
        ``(proxy for each request or None, connector)``.

    Raises:
        KubeConfigError: The URL's scheme is none of http, https and socks5, or it has no
            host or a bad port.
    """
    if not proxy_url:
        return None, aiohttp.TCPConnector(limit=limit, ssl=ssl, keepalive_timeout=keepalive_timeout)
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
        return proxy_url, aiohttp.TCPConnector(
            limit=limit, ssl=ssl, keepalive_timeout=keepalive_timeout
        )
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
        keepalive_timeout=keepalive_timeout,
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


#: The variables :func:`environment_proxy` reads (as client-go's ``httpproxy.FromEnvironment``:
#: the lower-case name wins; ``REQUEST_METHOD`` marks a CGI request, which ignores HTTP_PROXY).
_PROXY_ENV = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY")


def environment_proxy(server: str) -> str | None:
    """The proxy ``HTTPS_PROXY`` and ``NO_PROXY`` give for ``server``.

    As client-go's ``http.ProxyFromEnvironment``, through :func:`urllib.request.getproxies`.
    The environment is read for the few variables that matter (a client per member is built
    thousands of times: ``getproxies`` walks every variable, twice with ``NO_PROXY``), and
    the answer is kept per server and their values. As client-go, only the environment
    counts: no proxy variable set means no proxy, whatever a desktop's system settings say.

    Args:
        server: The apiserver URL.

    Returns:
        The proxy URL, or None when none is set or ``NO_PROXY`` covers the host.
    """
    import os

    found = tuple(os.environ.get(name) for name in _PROXY_ENV)
    if not any(found[:4]):
        return None
    return _proxy_for(server, (*found, os.environ.get("REQUEST_METHOD")))


@functools.lru_cache(maxsize=1024)
def _proxy_for(server: str, environment: tuple[str | None, ...]) -> str | None:
    """:func:`environment_proxy` for one server and one set of the variables' values."""
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    del environment  # the cache key: the values getproxies is about to read
    proxy = getproxies().get(urlsplit(server).scheme or "https")
    host = urlsplit(server).hostname or ""
    if not proxy or proxy_bypass(host):
        return None
    return str(proxy)
