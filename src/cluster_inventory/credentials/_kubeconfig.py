"""A kubeconfig for one ClusterProfile whose user is an exec credential plugin.

Lets plain ``kubectl`` (or any client-go program) reach a member the way a KEP-5339 consumer
does: the profile's server and CA, the exec extension as the cluster extension
``client.authentication.k8s.io/exec`` (client-go hands it to the plugin as
``spec.cluster.config``), and a user that runs the plugin with ``provideClusterInfo``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cluster_inventory.api import v1alpha1
from cluster_inventory.api.constants import ACCESS_PROVIDER_SECRETREADER, EXTENSION_EXEC
from cluster_inventory.credentials._access import profile_id
from cluster_inventory.credentials.errors import AccessProviderNotFound
from cluster_inventory.kubeconfig import one_cluster_document

if TYPE_CHECKING:
    from cluster_inventory.shapes import RawCluster, RawExec, RawKubeconfig

__all__ = ["kubeconfig_for_profile"]


def kubeconfig_for_profile(
    profile: v1alpha1.ClusterProfile | Mapping[str, Any],
    *,
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    provider: str = ACCESS_PROVIDER_SECRETREADER,
    install_hint: str | None = None,
) -> RawKubeconfig:
    """Build a kubeconfig (as a dict) reaching ``profile``'s member through an exec plugin.

    Args:
        profile: The ClusterProfile.
        command: The plugin executable (an absolute path is most robust).
        args: Plugin arguments.
        env: Extra plugin environment.
        provider: The access provider of the profile to use.
        install_hint: Shown by kubectl when the plugin is missing.

    Returns:
        A ``kind: Config`` mapping with one cluster, user and context named after the profile.

    Raises:
        AccessProviderNotFound: The profile does not advertise ``provider`` with a cluster.
    """
    if not isinstance(profile, v1alpha1.ClusterProfile):
        profile = v1alpha1.ClusterProfile.from_dict(profile)
    name = (profile.metadata.name if profile.metadata else None) or "cluster"
    pid = profile_id(profile)
    offers = profile.status.merged_access_providers() if profile.status else []
    advertised = {p.name: p for p in offers}
    entry = advertised.get(provider)
    if entry is None or entry.cluster is None:
        offered = ", ".join(sorted(advertised)) or "none"
        raise AccessProviderNotFound(
            pid, f"advertises no provider {provider!r} (offers: {offered})"
        )
    source = entry.cluster
    cluster: RawCluster = {"server": source.server}
    if source.certificate_authority_data:
        cluster["certificate-authority-data"] = source.certificate_authority_data
    if source.tls_server_name:
        cluster["tls-server-name"] = source.tls_server_name
    if source.proxy_url:
        cluster["proxy-url"] = source.proxy_url
    exec_payload = source.exec_config()
    if exec_payload is not None:
        cluster["extensions"] = [{"name": EXTENSION_EXEC, "extension": exec_payload}]
    user_exec: RawExec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": command,
        "args": list(args),
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()] or None,
        "provideClusterInfo": True,
        "interactiveMode": "Never",
    }
    if install_hint:
        user_exec["installHint"] = install_hint
    return one_cluster_document(name=name, cluster=cluster, user={"exec": user_exec})
