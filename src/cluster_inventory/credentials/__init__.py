"""credentials: the consumer side of KEP-5339 (now part of KEP-4322).

Load the provider file (:func:`load_provider_file`), resolve a ClusterProfile into access
settings (:func:`resolve_access`), run exec credential plugins with a shared, single-flight
cache (:class:`CredentialCache`), and get an authenticated client for a member cluster
(:func:`connect`, :func:`httpx_client`, :class:`ExecCredentialAuth`).

Names are imported lazily: the plugins in :mod:`cluster_inventory.credentials.plugins` live
under this package and must start without importing pydantic or kubernetes_asyncio, and
httpx is an optional dependency: :func:`httpx_client` and :class:`ExecCredentialAuth` need
the extra ``cluster-inventory[httpx]`` and, without it, raise ``ModuleNotFoundError``
naming it when first asked for.
"""

from __future__ import annotations

from cluster_inventory._lazy import lazy_exports

TYPE_CHECKING = False  # the typing module would slow the plugins' cold start
if TYPE_CHECKING:
    from cluster_inventory.credentials._access import ClusterAccess, resolve_access
    from cluster_inventory.credentials._cache import CredentialCache, CredentialMetrics
    from cluster_inventory.credentials._clients import (
        connect,
        connect_access,
        default_cache,
        hub_client,
    )
    from cluster_inventory.credentials._exec import (
        DEFAULT_EXEC_TIMEOUT,
        ExecCredential,
        exec_info,
        parse_exec_output,
        run_exec_plugin,
    )
    from cluster_inventory.credentials._httpx import ExecCredentialAuth, httpx_client
    from cluster_inventory.credentials._kubeconfig import kubeconfig_for_profile
    from cluster_inventory.credentials._providers import (
        CLIArgsPolicy,
        EnvVarsPolicy,
        ExecConfig,
        ExecEnvVar,
        Provider,
        ProviderConfig,
        load_provider_file,
    )
    from cluster_inventory.credentials.errors import (
        AccessNotPublished,
        AccessProviderNotFound,
        AccessResolutionError,
        CredentialsError,
        ExecCredentialInvalid,
        ExecPluginError,
        ExecPluginFailed,
        ExecPluginNotFound,
        ExecPluginTimeout,
        ProviderConfigError,
    )

_WHERE = {
    "ClusterAccess": "_access",
    "resolve_access": "_access",
    "CredentialCache": "_cache",
    "CredentialMetrics": "_cache",
    "ExecCredentialAuth": "_httpx",
    "connect": "_clients",
    "connect_access": "_clients",
    "default_cache": "_clients",
    "hub_client": "_clients",
    "httpx_client": "_httpx",
    "DEFAULT_EXEC_TIMEOUT": "_exec",
    "ExecCredential": "_exec",
    "exec_info": "_exec",
    "parse_exec_output": "_exec",
    "run_exec_plugin": "_exec",
    "CLIArgsPolicy": "_providers",
    "EnvVarsPolicy": "_providers",
    "ExecConfig": "_providers",
    "ExecEnvVar": "_providers",
    "Provider": "_providers",
    "ProviderConfig": "_providers",
    "load_provider_file": "_providers",
    "kubeconfig_for_profile": "_kubeconfig",
    "AccessNotPublished": "errors",
    "AccessProviderNotFound": "errors",
    "AccessResolutionError": "errors",
    "CredentialsError": "errors",
    "ExecCredentialInvalid": "errors",
    "ExecPluginError": "errors",
    "ExecPluginFailed": "errors",
    "ExecPluginNotFound": "errors",
    "ExecPluginTimeout": "errors",
    "ProviderConfigError": "errors",
}

__all__ = [
    "DEFAULT_EXEC_TIMEOUT",
    "AccessNotPublished",
    "AccessProviderNotFound",
    "AccessResolutionError",
    "CLIArgsPolicy",
    "ClusterAccess",
    "CredentialCache",
    "CredentialMetrics",
    "CredentialsError",
    "EnvVarsPolicy",
    "ExecConfig",
    "ExecCredential",
    "ExecCredentialAuth",
    "ExecCredentialInvalid",
    "ExecEnvVar",
    "ExecPluginError",
    "ExecPluginFailed",
    "ExecPluginNotFound",
    "ExecPluginTimeout",
    "Provider",
    "ProviderConfig",
    "ProviderConfigError",
    "connect",
    "connect_access",
    "default_cache",
    "exec_info",
    "httpx_client",
    "hub_client",
    "kubeconfig_for_profile",
    "load_provider_file",
    "parse_exec_output",
    "resolve_access",
    "run_exec_plugin",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
