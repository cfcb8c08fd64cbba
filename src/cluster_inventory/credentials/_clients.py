"""Authenticated clients for member clusters, sharing one credential cache.

:func:`connect` returns a kubernetes_asyncio ``ApiClient`` (built by
:func:`cluster_inventory.kube.new_client`: CA in memory, a plugin's client key passed through
a 0600 file that is unlinked at once) whose token comes from the cache before each request
and which, after a 401, drops the refused token, re-runs the plugin once and retries.
:class:`~cluster_inventory.credentials.ExecCredentialAuth` (module ``_httpx``) is the same
thing as an ``httpx.Auth`` flow; it lives apart so that ``connect`` does not import httpx,
whose package import also loads its command line (click, rich, pygments): 0.27 s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.credentials._access import ClusterAccess, resolve_access
from cluster_inventory.credentials._cache import CredentialCache
from cluster_inventory.credentials._exec import ExecCredential
from cluster_inventory.credentials._providers import (
    ProviderConfig,
    exec_config_from_dict,
    load_provider_file,
)

if TYPE_CHECKING:
    from cluster_inventory.api import v1alpha1

__all__ = ["connect", "connect_access", "default_cache", "hub_client"]

_default_cache: CredentialCache | None = None


def default_cache() -> CredentialCache:
    """The process-wide cache used when a caller passes none."""
    global _default_cache
    if _default_cache is None:
        _default_cache = CredentialCache()
    return _default_cache


def providers_of(providers: ProviderConfig | str | os.PathLike[str]) -> ProviderConfig:
    """A loaded provider configuration, loading ``providers`` if it is a path."""
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
    access = resolve_access(profile, providers_of(providers), allow_insecure=allow_insecure)
    return await connect_access(access, cache=cache)


async def connect_access(
    access: ClusterAccess,
    *,
    cache: CredentialCache | None = None,
    keepalive_timeout: float = 15.0,
) -> kube.ApiClient:
    """Like :func:`connect`, from already resolved access settings.

    When the credential is not cached yet, the client's first TCP connect and TLS handshake
    run while the plugin does (:meth:`kube._transport._RESTClient.start_connecting`): a
    bearer token is a header, which the handshake does not need. A plugin that answers with
    a client certificate needs it in the handshake: that client is built, and connects,
    once the credential is there, and the connection opened meanwhile is dropped (one
    handshake thrown away on such a client's first connection).

    ``keepalive_timeout``: seconds an idle connection is kept (:func:`kube.new_client`).

    Raises:
        ExecPluginError: The plugin failed on the first credential.
        KubeConfigError: The TLS material does not load.
    """
    cache = default_cache() if cache is None else cache
    first = cache.peek(access)
    if first is not None:
        return await _client(access, first, cache, keepalive_timeout)
    client = await _client(access, None, cache, keepalive_timeout)
    try:
        client.rest_client.start_connecting()
        first = await cache.get(access)
        if first.client_certificate_data is None:
            return client
    except BaseException:
        await client.close()
        raise
    await client.close()
    return await _client(access, first, cache, keepalive_timeout)


async def _client(
    access: ClusterAccess,
    first: ExecCredential | None,
    cache: CredentialCache,
    keepalive_timeout: float,
) -> kube.ApiClient:
    """The client for ``access`` given its first credential (None: a bearer token to come)."""
    if first is not None and first.client_certificate_data is not None:
        # A certificate lives in the TLS context: it is fixed for this client's lifetime.
        conn = access.connection(
            client_cert_data=first.client_certificate_data,
            client_key_data=first.client_key_data,
        )
        if first.token is None:
            return await kube.new_client(conn, keepalive_timeout=keepalive_timeout)
    else:
        conn = access.connection()

    async def token() -> str:
        return (await cache.get(access)).token or ""

    async def unauthorized(rejected: str) -> None:
        cache.invalidate(access, rejected)

    return await kube.new_client(
        conn,
        token_source=token,
        on_unauthorized=unauthorized,
        keepalive_timeout=keepalive_timeout,
    )


async def hub_client(
    conn: kube.ClusterConnection,
    *,
    cache: CredentialCache | None = None,
    keepalive_timeout: float = 15.0,
) -> kube.ApiClient:
    """A client for a connection that :func:`cluster_inventory.kube.load_connection` found.

    The connection's own credentials are used (token, client certificate); an exec user
    (kubeconfig ``users[].user.exec``) is run as client-go runs it, through the same runner
    and cache as a member's plugin: ``KUBERNETES_EXEC_INFO`` with the cluster (and its
    ``client.authentication.k8s.io/exec`` extension as ``spec.cluster.config``) when
    ``provideClusterInfo`` is true, never interactive, re-run after a 401.

    Args:
        conn: The hub (or any cluster) connection.
        cache: Credential cache to share; defaults to the process-wide one.
        keepalive_timeout: Seconds an idle connection is kept for the next request
            (:func:`cluster_inventory.kube.new_client`).

    Returns:
        A kubernetes_asyncio ``ApiClient``; close it with ``await client.close()``.

    Raises:
        ProviderConfigError: The exec stanza is invalid (names the kubeconfig and field).
        ExecPluginError: The plugin failed on the first credential.
        KubeConfigError: The TLS material or the proxy URL does not load.
    """
    if conn.exec_user is None:
        return await kube.new_client(conn, keepalive_timeout=keepalive_timeout)
    source = conn.name or conn.server
    access = ClusterAccess(
        profile=f"kubeconfig context {source}",
        provider="kubeconfig",
        server=conn.server,
        ca_data=conn.ca_data,
        tls_server_name=conn.tls_server_name,
        insecure_skip_tls_verify=conn.insecure_skip_tls_verify,
        proxy_url=conn.proxy_url,
        cluster_config=conn.exec_cluster_config,
        exec_config=exec_config_from_dict(conn.exec_user, source=source, where="user.exec"),
    )
    return await connect_access(access, cache=cache, keepalive_timeout=keepalive_timeout)
