"""The consumer's exec credentials as an ``httpx.Auth`` flow, for httpx users.

An optional adapter: the product speaks HTTP through aiohttp (docs/architecture.md, "HTTP
stack and proxies"), and httpx comes with the extra ``cluster-inventory[httpx]`` (httpx and
socksio, for a ``socks5`` proxy-url). :mod:`cluster_inventory.credentials` imports this
module only when ``httpx_client`` or ``ExecCredentialAuth`` is first asked for; without
httpx that raises an ImportError naming the extra. Shares the credential cache of
:func:`~cluster_inventory.credentials.connect`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator, Mapping
from typing import Any

try:
    import httpx
except ModuleNotFoundError as exc:  # pragma: no cover - covered in a subprocess
    if exc.name != "httpx":
        raise
    raise ModuleNotFoundError(
        "cluster_inventory.credentials.httpx_client and ExecCredentialAuth need httpx, an "
        "optional dependency: pip install 'cluster-inventory[httpx]'",
        name="httpx",
    ) from None

from cluster_inventory import kube
from cluster_inventory.api import v1alpha1
from cluster_inventory.credentials._access import ClusterAccess, resolve_access
from cluster_inventory.credentials._cache import CredentialCache
from cluster_inventory.credentials._clients import default_cache, providers_of
from cluster_inventory.credentials._providers import ProviderConfig

__all__ = ["ExecCredentialAuth", "httpx_client"]


class ExecCredentialAuth(httpx.Auth):
    """An ``httpx.Auth`` flow backed by the credential cache (async clients only).

    Sets ``Authorization: Bearer <token>``; after a 401 it invalidates that token, fetches a
    new one (one plugin run however many requests failed together) and resends once.

    Args:
        access: Resolved access settings of one member.
        cache: Shared credential cache; defaults to the process-wide one.
    """

    requires_request_body = False
    requires_response_body = False

    def __init__(self, access: ClusterAccess, cache: CredentialCache | None = None) -> None:
        self.access = access
        self.cache = default_cache() if cache is None else cache

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, Any, None]:
        """Refused: plugin runs are asynchronous.

        Raises:
            RuntimeError: Always; use ``httpx.AsyncClient``.
        """
        raise RuntimeError("ExecCredentialAuth works with httpx.AsyncClient only")
        yield request  # pragma: no cover

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Authenticate ``request``; on 401 refresh the credential and resend once."""
        cred = await self.cache.get(self.access)
        request.headers["Authorization"] = f"Bearer {cred.token or ''}"
        response = yield request
        if response.status_code == 401:
            self.cache.invalidate(self.access, cred)
            cred = await self.cache.get(self.access)
            request.headers["Authorization"] = f"Bearer {cred.token or ''}"
            yield request


def httpx_client(
    profile: v1alpha1.ClusterProfile | Mapping[str, Any],
    providers: ProviderConfig | str | os.PathLike[str],
    *,
    cache: CredentialCache | None = None,
    allow_insecure: bool = False,
    **kwargs: Any,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for the member: base URL, TLS from the profile, exec auth.

    Args:
        profile: The ClusterProfile.
        providers: The provider file, loaded or as a path.
        cache: Credential cache to share.
        allow_insecure: Honour ``insecure-skip-tls-verify``.
        **kwargs: Passed to ``httpx.AsyncClient``.

    Raises:
        AccessResolutionError: As for :func:`connect`.
    """
    access = resolve_access(profile, providers_of(providers), allow_insecure=allow_insecure)
    return httpx.AsyncClient(
        base_url=access.server,
        verify=kube.ssl_context_for(access.connection()),
        auth=ExecCredentialAuth(access, cache),
        trust_env=access.proxy_url is None,
        proxy=access.proxy_url,
        **kwargs,
    )
