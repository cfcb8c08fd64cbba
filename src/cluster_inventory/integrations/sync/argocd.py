"""Argo CD cluster Secrets kept from ClusterProfiles (Argo CD >= 3.5 exec provider shape).

Argo CD reads clusters only from Secrets labelled ``argocd.argoproj.io/secret-type:
cluster`` in its own namespace (argo-cd#15601), with data ``name``, ``server`` and ``config``
(JSON of Argo's ``ClusterConfig``). Since v3.5.0 (argo-cd PR #27976) ``config`` may carry
``execProviderConfig`` with ``command``, ``args``, ``env`` (a map), ``apiVersion``,
``installHint``, ``provideClusterInfo`` and ``config`` (the kubeconfig cluster extension
``client.authentication.k8s.io/exec``, handed to the plugin as ``spec.cluster.config``):
exactly what a KEP-5339 consumer needs, so Argo CD reaches each member through the same exec
plugin as any other consumer and no token is ever copied into Argo's namespace.

The pure parts: :func:`assign_cluster_secrets` (which profile gets which Secret: profiles
sharing an ``inventory-member-id`` across inventories yield one Secret; ``data.name`` is the
profile name, or ``<namespace>-<name>`` when two inventories hold the name) and
:func:`render_cluster_secret` (the Secret, from the profile and the consumer's provider file,
chosen as :func:`~cluster_inventory.credentials.resolve_access` chooses). The controller,
:class:`ArgoCDSync`, is a :class:`~cluster_inventory.integrations.sync._mirror.ProfileMirror`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from cryptography import x509

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_ACCESS_PROVIDER,
    ANNOTATION_PROFILE,
    LABEL_PROFILE_NAMESPACE,
    REPORTING_CONTROLLER_ARGOCD,
)
from cluster_inventory.api.constants import (
    FIELD_MANAGER_ARGOCD as FIELD_MANAGER,
)
from cluster_inventory.api.constants import (
    LABEL_ARGOCD_SECRET_TYPE as LABEL_SECRET_TYPE,
)
from cluster_inventory.api.views import ProfileView
from cluster_inventory.credentials import (
    AccessNotPublished,
    AccessProviderNotFound,
    AccessResolutionError,
    ClusterAccess,
    ProviderConfig,
    resolve_access,
)
from cluster_inventory.integrations.sync._assignment import Assignment, RenderError, RenderPending
from cluster_inventory.integrations.sync._mirror import MirrorOptions, ProfileMirror

__all__ = [
    "ANNOTATION_ACCESS_PROVIDER",
    "DEFAULT_NAMESPACE",
    "FIELD_MANAGER",
    "LABEL_PROFILE_NAMESPACE",
    "LABEL_SECRET_TYPE",
    "LEASE_NAME",
    "ArgoCDSync",
    "assign_cluster_secrets",
    "cluster_config",
    "render_cluster_secret",
    "secret_name",
]

#: Argo CD's namespace in a default install.
DEFAULT_NAMESPACE = "argocd"
#: Leader-election Lease name.
LEASE_NAME = "cluster-inventory-argocd"
_MAX_NAME = 253


def secret_name(namespace: str, name: str) -> str:
    """The Secret name for profile ``namespace/name``: ``cluster-<namespace>-<name>``.

    Stable whatever else the inventory holds (a second inventory with the same profile name
    changes ``data.name``, not the Secret). Names past 253 characters are cut and end with
    10 hex digits of a SHA-256 of the full name, so they stay unique.

    Args:
        namespace: The inventory namespace.
        name: The profile name.

    Returns:
        A valid Secret name (DNS subdomain).
    """
    full = f"cluster-{namespace}-{name}"
    if len(full) <= _MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    return f"{full[: _MAX_NAME - 11].rstrip('.-')}-{digest}"


def assign_cluster_secrets(profiles: Sequence[Mapping[str, Any]]) -> dict[str, Assignment]:
    """Which profile each Argo CD cluster Secret is rendered from. Pure.

    Profiles earlier in ``profiles`` win: among profiles sharing a
    ``multicluster.x-k8s.io/inventory-member-id`` label (one member in several inventories)
    only the first yields a Secret, since Argo CD keys clusters by server and one member must
    not appear twice. ``data.name`` is the profile name, or ``<namespace>-<name>`` when two
    of the remaining profiles share the name.

    Args:
        profiles: ClusterProfiles in preference order (inventory namespace order, then name).

    Returns:
        Secret name to assignment.
    """
    seen_members: set[str] = set()
    kept: list[tuple[str, str]] = []
    for view in map(ProfileView.of, profiles):
        if view.member_id:
            if view.member_id in seen_members:
                continue
            seen_members.add(view.member_id)
        kept.append((view.namespace, view.name))
    counts: dict[str, int] = {}
    for _, name in kept:
        counts[name] = counts.get(name, 0) + 1
    return {
        secret_name(ns, name): Assignment(
            profile=f"{ns}/{name}", display_name=name if counts[name] == 1 else f"{ns}-{name}"
        )
        for ns, name in kept
    }


def cluster_config(access: ClusterAccess) -> dict[str, Any]:
    """Argo CD's ``ClusterConfig`` (the Secret's ``config``) for resolved access settings.

    Args:
        access: What :func:`~cluster_inventory.credentials.resolve_access` chose.

    Returns:
        ``{"execProviderConfig": {...}, "tlsClientConfig": {...}}`` in Argo CD >= 3.5's JSON
        field names (``pkg/apis/application/v1alpha1`` ``ExecProviderConfig`` and
        ``TLSClientConfig``; ``caData`` is base64 of the PEM bundle, as Go encodes
        ``[]byte``), plus ``proxyUrl`` (``ClusterConfig.ProxyUrl``) when the access provider
        has a ``proxy-url``, so Argo CD dials the member as every other consumer does. Never a
        credential: the plugin fetches one when Argo CD connects.
    """
    exec_config = access.exec_config
    provider: dict[str, Any] = {
        "command": exec_config.command,
        "args": list(exec_config.args),
        "env": {e.name: e.value for e in exec_config.env},
        "apiVersion": exec_config.api_version,
        "provideClusterInfo": exec_config.provide_cluster_info,
    }
    if exec_config.install_hint:
        provider["installHint"] = exec_config.install_hint
    if access.cluster_config is not None:
        provider["config"] = access.cluster_config
    tls: dict[str, Any] = {"insecure": False}
    if access.tls_server_name:
        tls["serverName"] = access.tls_server_name
    if access.ca_data:
        tls["caData"] = base64.b64encode(access.ca_data).decode()
    config: dict[str, Any] = {"execProviderConfig": provider, "tlsClientConfig": tls}
    if access.proxy_url:
        config["proxyUrl"] = access.proxy_url
    return config


def render_cluster_secret(
    profile: Mapping[str, Any],
    providers: ProviderConfig,
    *,
    namespace: str,
    name: str | None = None,
    display_name: str | None = None,
) -> dict[str, Any]:
    """The Argo CD cluster Secret for one profile. Pure.

    Args:
        profile: The ClusterProfile (decoded JSON).
        providers: The consumer's provider file: the first of its providers the profile
            advertises is used (``pkg/access`` order), with its exec config and the
            profile-sourced args/env its policies allow.
        namespace: Argo CD's namespace.
        name: The Secret name (default :func:`secret_name`).
        display_name: ``data.name`` (default: the profile name).

    Returns:
        A ``v1/Secret`` body: labels = the profile's labels, ``argocd.argoproj.io/secret-type:
        cluster`` and the source namespace; annotations naming the profile and the access
        provider; ``data`` (base64) ``name``, ``server`` and ``config``. The caller adds its
        ownership label and fingerprint.

    Raises:
        RenderPending: The profile advertises no access provider yet (not joined).
        RenderError: No provider of the file is advertised, the chosen access provider lacks
            a server, the CA is not base64 or not a PEM certificate, the profile asks for
            ``insecure-skip-tls-verify``, or the profile itself is malformed; the error names
            the profile and the field.
    """
    view = ProfileView.of(profile)
    pid = view.key
    try:
        access = resolve_access(profile, providers)
    except AccessNotPublished as exc:
        raise RenderPending(pid, exc.field, exc.problem) from None
    except AccessProviderNotFound as exc:
        raise RenderError(pid, exc.field, exc.problem) from None
    except AccessResolutionError as exc:
        raise RenderError(pid, exc.field, exc.problem) from None
    if access.ca_data:
        try:
            x509.load_pem_x509_certificates(access.ca_data)
        except ValueError:
            field = f"status.accessProviders[name={access.provider}].cluster"
            raise RenderError(
                pid,
                f"{field}.certificate-authority-data",
                "does not hold a PEM certificate",
            ) from None
    config = cluster_config(access)
    labels = {
        **view.labels,
        LABEL_SECRET_TYPE: "cluster",
        LABEL_PROFILE_NAMESPACE: view.namespace,
    }
    data = {
        "name": display_name or view.name,
        "server": access.server,
        "config": json.dumps(config, sort_keys=True, separators=(",", ":")),
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name or secret_name(view.namespace, view.name),
            "namespace": namespace,
            "labels": labels,
            "annotations": {ANNOTATION_PROFILE: pid, ANNOTATION_ACCESS_PROVIDER: access.provider},
        },
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


class ArgoCDSync(ProfileMirror):
    """Keep one Argo CD cluster Secret per ClusterProfile of the inventory namespaces.

    Args:
        hub: API client of the hub (the caller closes it).
        providers: The consumer's provider file (Argo CD's repo-server and application
            controller must be able to run the plugin it names).
        namespaces: Inventory namespaces, in preference order (member-id dedupe keeps the
            profile of the first).
        argocd_namespace: Argo CD's namespace (where the Secrets go).
        **options: :class:`MirrorOptions` (label selector, workers, registry, identity, and
            ``instance``: this sync's name; its Secrets carry it and it never updates or
            deletes another instance's).
    """

    resource = kube.SECRETS
    field_manager = FIELD_MANAGER
    controller = "argocd-sync"
    reporting_controller = REPORTING_CONTROLLER_ARGOCD

    def __init__(
        self,
        hub: kube.ApiClient,
        providers: ProviderConfig,
        *,
        namespaces: Sequence[str],
        argocd_namespace: str = DEFAULT_NAMESPACE,
        **options: Unpack[MirrorOptions],
    ) -> None:
        self.providers = providers
        self.target_namespace = argocd_namespace
        super().__init__(hub, namespaces=namespaces, **options)

    def assign(self, profiles: Sequence[Mapping[str, Any]]) -> dict[str, Assignment]:
        """See :func:`assign_cluster_secrets`."""
        return assign_cluster_secrets(profiles)

    def render(
        self, profile: Mapping[str, Any], name: str, assignment: Assignment
    ) -> dict[str, Any]:
        """See :func:`render_cluster_secret`."""
        assert self.target_namespace is not None
        return render_cluster_secret(
            profile,
            self.providers,
            namespace=self.target_namespace,
            name=name,
            display_name=assignment.display_name,
        )
