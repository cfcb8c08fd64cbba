"""Access resolution: from a ClusterProfile and the consumer's provider file to access settings.

Pure and synchronous. Follows ``pkg/access`` (KEP-5339): the first provider in file
order that the profile advertises wins, ``accessProviders`` wins over the deprecated
``credentialProviders``, the ``client.authentication.k8s.io/exec`` extension becomes the
plugin's ``spec.cluster.config``, and the additional-args/-envs extensions apply only under
the consumer's policies. Unlike upstream, the shared :class:`ExecConfig` is never mutated:
each resolution builds a new one, so repeated calls cannot pile arguments up.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    EXTENSION_ADDITIONAL_ARGS,
    EXTENSION_ADDITIONAL_ENVS,
    EXTENSION_EXEC,
)
from cluster_inventory.credentials._providers import (
    CLIArgsPolicy,
    EnvVarsPolicy,
    ExecConfig,
    ExecEnvVar,
    ProviderConfig,
)
from cluster_inventory.credentials.errors import (
    AccessNotPublished,
    AccessProviderNotFound,
    AccessResolutionError,
)
from cluster_inventory.shapes import RawExecCluster

if TYPE_CHECKING:
    from pydantic import ValidationError

    from cluster_inventory.api import v1alpha1

__all__ = ["ClusterAccess", "resolve_access"]


@dataclass(frozen=True, kw_only=True)
class ClusterAccess:
    """How this consumer reaches one member cluster. Holds no credential.

    Attributes:
        profile: ``namespace/name`` of the ClusterProfile.
        provider: The chosen access provider name.
        server: The member's API server URL.
        ca_data: PEM CA bundle, kept in memory, or None for the system store.
        tls_server_name: Name to verify the serving certificate against.
        insecure_skip_tls_verify: Only ever True if the consumer allowed it.
        proxy_url: Explicit proxy URL.
        disable_compression: Ask for uncompressed responses.
        cluster_config: The exec extension payload (``spec.cluster.config``), or None.
        exec_config: The plugin to run, with profile-sourced args and env already applied.
        cache_key: Digest of the exec config and cluster info: equal keys share a credential.
    """

    profile: str
    provider: str
    server: str
    ca_data: bytes | None = None
    tls_server_name: str | None = None
    insecure_skip_tls_verify: bool = False
    proxy_url: str | None = None
    disable_compression: bool = False
    cluster_config: Any = None
    exec_config: ExecConfig
    cache_key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.cache_key:
            blob = json.dumps(
                {"exec": self.exec_config.identity(), "cluster": self.cluster_info()},
                sort_keys=True,
                separators=(",", ":"),
            )
            object.__setattr__(self, "cache_key", hashlib.sha256(blob.encode()).hexdigest())

    def cluster_info(self) -> RawExecCluster:
        """The ``spec.cluster`` object of ``KUBERNETES_EXEC_INFO`` (client-go's Cluster type)."""
        info: RawExecCluster = {"server": self.server}
        if self.tls_server_name:
            info["tls-server-name"] = self.tls_server_name
        if self.insecure_skip_tls_verify:
            info["insecure-skip-tls-verify"] = True
        if self.ca_data:
            info["certificate-authority-data"] = base64.b64encode(self.ca_data).decode()
        if self.proxy_url:
            info["proxy-url"] = self.proxy_url
        if self.disable_compression:
            info["disable-compression"] = True
        if self.cluster_config is not None:
            info["config"] = self.cluster_config
        return info

    def connection(
        self,
        *,
        client_cert_data: bytes | None = None,
        client_key_data: bytes | None = None,
    ) -> kube.ClusterConnection:
        """The connection details (no token: that comes from the credential cache)."""
        return kube.ClusterConnection(
            server=self.server,
            ca_data=self.ca_data,
            client_cert_data=client_cert_data,
            client_key_data=client_key_data,
            tls_server_name=self.tls_server_name,
            insecure_skip_tls_verify=self.insecure_skip_tls_verify,
            proxy_url=self.proxy_url,
            name=self.profile,
        )


@functools.cache
def _models() -> tuple[
    type[v1alpha1.ClusterProfile],
    type[ValidationError],
    Callable[[ValidationError], tuple[str, str]],
]:
    """The ClusterProfile model, pydantic's error and its reader, imported on first use.

    Importing pydantic and building the models is most of a runtime's start-up memory
    (``import cluster_inventory.runtime`` must not pay it, docs/benchmarks.md); cached, so
    that each resolution after the first costs a dictionary lookup, not an import.
    """
    from pydantic import ValidationError

    from cluster_inventory.api import field_error, v1alpha1

    return v1alpha1.ClusterProfile, ValidationError, field_error


def profile_id(profile: v1alpha1.ClusterProfile) -> str:
    """``namespace/name`` of a profile, for error messages."""
    meta = profile.metadata
    name = (meta.name if meta else None) or "<unnamed>"
    namespace = meta.namespace if meta else None
    return f"{namespace}/{name}" if namespace else name


def _dict_id(profile: Any) -> str:
    """``namespace/name`` of a decoded profile that may not even have metadata."""
    meta = profile.get("metadata") if isinstance(profile, Mapping) else None
    if not isinstance(meta, Mapping):
        return "<unnamed>"
    name, namespace = meta.get("name") or "<unnamed>", meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def resolve_access(
    profile: v1alpha1.ClusterProfile | Mapping[str, Any],
    providers: ProviderConfig,
    *,
    allow_insecure: bool = False,
) -> ClusterAccess:
    """Choose the access provider for ``profile`` and build the settings to reach it.

    Args:
        profile: The ClusterProfile (model or decoded dict).
        providers: The consumer's provider file.
        allow_insecure: Honour ``insecure-skip-tls-verify``; refused unless set.

    Returns:
        The access settings; the provider's exec config is copied, never changed.

    Raises:
        AccessNotPublished: The profile advertises no access provider yet (not joined).
        AccessProviderNotFound: No provider of the file is advertised by the profile.
        AccessResolutionError: The profile is not a valid ClusterProfile, the chosen
            provider has no exec config or no cluster, an extension payload is malformed, the
            CA is not base64, or the profile asks for ``insecure-skip-tls-verify`` without
            ``allow_insecure``. ``field`` names the field at fault.
    """
    model, validation_error, field_error = _models()
    if not isinstance(profile, model):
        try:
            profile = model.from_dict(profile)
        except validation_error as exc:
            field, problem = field_error(exc)
            raise AccessResolutionError(_dict_id(profile), problem, field=field) from None
    pid = profile_id(profile)
    advertised = {
        p.name: p for p in (profile.status.merged_access_providers() if profile.status else [])
    }
    chosen = next((p for p in providers.providers if p.name in advertised), None)
    if chosen is None and not advertised:
        raise AccessNotPublished(
            pid,
            "none published yet (the member has not joined); waiting for the cluster manager",
        )
    if chosen is None:
        offered = ", ".join(sorted(advertised)) or "none"
        wanted = ", ".join(p.name for p in providers.providers) or "none"
        raise AccessProviderNotFound(
            pid,
            f"no access provider matches the provider file {providers.source} "
            f"(profile offers: {offered}; file has: {wanted})",
        )
    if chosen.exec_config is None:
        raise AccessResolutionError(
            pid,
            f"is missing (provider {chosen.name!r} has no execConfig)",
            field=f"{providers.source}: providers[name={chosen.name}].execConfig",
        )
    cluster = advertised[chosen.name].cluster
    where = f"status.accessProviders[name={chosen.name}].cluster"
    if cluster is None or not cluster.server:
        raise AccessResolutionError(pid, "is missing", field=f"{where}.server")
    try:
        ca = cluster.ca_pem()
    except ValueError:
        field = f"{where}.certificate-authority-data"
        raise AccessResolutionError(pid, "is not base64", field=field) from None
    if cluster.insecure_skip_tls_verify and not allow_insecure:
        raise AccessResolutionError(
            pid,
            "is true; pass allow_insecure=True to accept an unverified server",
            field=f"{where}.insecure-skip-tls-verify",
        )
    exec_config = _apply_extensions(chosen.exec_config, cluster, chosen, pid, where)
    return ClusterAccess(
        profile=pid,
        provider=chosen.name,
        server=cluster.server,
        ca_data=ca,
        tls_server_name=cluster.tls_server_name or None,
        insecure_skip_tls_verify=bool(cluster.insecure_skip_tls_verify),
        proxy_url=cluster.proxy_url or None,
        disable_compression=bool(cluster.disable_compression),
        cluster_config=cluster.extension(EXTENSION_EXEC),
        exec_config=exec_config,
    )


def _apply_extensions(
    base: ExecConfig,
    cluster: v1alpha1.Cluster,
    provider: Any,
    pid: str,
    where: str,
) -> ExecConfig:
    names = [ext.name for ext in cluster.extensions or ()]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise AccessResolutionError(
            pid,
            f"duplicate name {duplicates[0]!r} in list",
            field=f"{where}.extensions",
        )
    args = list(base.args)
    env = {e.name: e.value for e in base.env}
    for ext in cluster.extensions or ():
        if (
            ext.name == EXTENSION_ADDITIONAL_ARGS
            and provider.cli_args_policy is CLIArgsPolicy.APPEND
        ):
            args.extend(_extra_args(ext.extension, pid, f"{where}.extensions[name={ext.name}]"))
        elif ext.name == EXTENSION_ADDITIONAL_ENVS and provider.env_vars_policy in (
            EnvVarsPolicy.APPEND_IF_NOT_EXISTS,
            EnvVarsPolicy.REPLACE,
        ):
            extra = _extra_envs(ext.extension, pid, f"{where}.extensions[name={ext.name}]")
            for name, value in extra.items():
                if provider.env_vars_policy is EnvVarsPolicy.REPLACE or name not in env:
                    env[name] = value
    return replace(
        base,
        args=tuple(args),
        env=tuple(ExecEnvVar(name=k, value=v) for k, v in env.items()),
        interactive_mode="Never",
    )


def _extra_args(payload: Any, pid: str, where: str) -> list[str]:
    if isinstance(payload, Mapping):
        payload = payload.get("args")
    if isinstance(payload, list) and all(isinstance(a, str) for a in payload):
        return list(payload)
    raise AccessResolutionError(pid, "must be a list of strings", field=f"{where}.extension")


def _extra_envs(payload: Any, pid: str, where: str) -> dict[str, str]:
    if isinstance(payload, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in payload.items()
    ):
        return dict(payload)
    raise AccessResolutionError(pid, "must map names to string values", field=f"{where}.extension")
