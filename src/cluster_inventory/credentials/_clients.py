"""Authenticated clients for member clusters, sharing one credential cache.

:func:`connect` returns a kubernetes_asyncio ``ApiClient`` (built by
:func:`cluster_inventory.kube.new_client`: CA in memory, a plugin's client key passed through
a 0600 file that is unlinked at once) whose token comes from the cache before each request
and which, after a 401, drops the refused token, re-runs the plugin once and retries.
:class:`ExecCredentialAuth` is the same thing as an ``httpx.Auth`` flow.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator, Mapping
from pathlib import Path
from typing import Any

import httpx

from cluster_inventory import kube
from cluster_inventory.api import v1alpha1
from cluster_inventory.credentials._access import ClusterAccess, resolve_access
from cluster_inventory.credentials._cache import CredentialCache
from cluster_inventory.credentials._providers import ProviderConfig, load_provider_file

__all__ = ["ExecCredentialAuth", "connect", "connect_access", "default_cache", "httpx_client"]

_default_cache: CredentialCache | None = None


def default_cache() -> CredentialCache:
    """The process-wide cache used when a caller passes none."""
    global _default_cache
    if _default_cache is None:
        _default_cache = CredentialCache()
    return _default_cache


def _providers(providers: ProviderConfig | str | os.PathLike[str]) -> ProviderConfig:
    if isinstance(providers, ProviderConfig):
        return providers
    return load_provider_file(Path(providers))


async def connect(
    profile: v1alpha1.ClusterProfile | Mapping[str, Any],
    providers: ProviderConfig | str | os.PathLike[str],
    *,
    cache: CredentialCache | None = None,
    allow_insecure: bool = False,
) -> kube.ApiClient:
    """Return an authenticated client for the member cluster that ``profile`` describes.

    The first credential is fetched here, so a broken plugin fails now rather than at the
    first request. Close the client with ``await client.close()`` (or ``async with``).

    Args:
        profile: The ClusterProfile (model or decoded dict).
        providers: The provider file, loaded or as a path.
        cache: Credential cache to share; defaults to the process-wide one.
        allow_insecure: Honour ``insecure-skip-tls-verify`` on the profile.

    Returns:
        A kubernetes_asyncio ``ApiClient``.

    Raises:
        ProviderConfigError: The provider file is invalid.
        AccessResolutionError: The profile offers no usable access provider.
        ExecPluginError: The plugin failed (one subclass per cause).
        KubeConfigError: The CA or the plugin's client certificate does not load.
    """
    access = resolve_access(profile, _providers(providers), allow_insecure=allow_insecure)
    return await connect_access(access, cache=cache)


async def connect_access(
    access: ClusterAccess, *, cache: CredentialCache | None = None
) -> kube.ApiClient:
    """Like :func:`connect`, from already resolved access settings."""
    cache = default_cache() if cache is None else cache
    first = await cache.get(access)
    if first.client_certificate_data is not None:
        # A certificate lives in the TLS context: it is fixed for this client's lifetime.
        conn = access.connection(
            client_cert_data=first.client_certificate_data,
            client_key_data=first.client_key_data,
        )
        if first.token is None:
            return await kube.new_client(conn)
    else:
        conn = access.connection()

    async def token() -> str:
        return (await cache.get(access)).token or ""

    async def unauthorized(rejected: str) -> None:
        cache.invalidate(access, rejected)

    return await kube.new_client(conn, token_source=token, on_unauthorized=unauthorized)


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
    access = resolve_access(profile, _providers(providers), allow_insecure=allow_insecure)
    return httpx.AsyncClient(
        base_url=access.server,
        verify=kube.ssl_context_for(access.connection()),
        auth=ExecCredentialAuth(access, cache),
        trust_env=access.proxy_url is None,
        proxy=access.proxy_url,
        **kwargs,
    )
