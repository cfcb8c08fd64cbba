"""Kueue MultiKueueClusters kept from ClusterProfiles, and the Kueue configuration to read them.

Kueue (``sigs.k8s.io/kueue`` v0.19, feature gate ``MultiKueueClusterProfile``) can reach a
worker cluster through a ClusterProfile: a cluster-scoped ``kueue.x-k8s.io/v1beta2``
MultiKueueCluster with ``spec.clusterSource.clusterProfileRef.name`` names a profile in
Kueue's own namespace (it reads profiles nowhere else), and Kueue's Configuration maps access
providers to exec plugins (``multiKueue.clusterProfile.accessProviders[{name, execConfig}]``).
Kueue ships no generator for those objects (kueue#7716), so :class:`MultiKueueSync` keeps one
MultiKueueCluster per profile of Kueue's namespace (name = profile name; ``spec`` only, as
Kueue owns ``status``), deletes it when the profile goes, and optionally keeps one
MultiKueueConfig listing them (Kueue allows 1 to 20 names: more is reported, never cut).
:func:`kueue_configuration` renders the Configuration fragment from the consumer's provider
file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_PROFILE,
    DEFAULT_SYNC_INSTANCE,
    LABEL_CLUSTER_SET,
    LABEL_SYNC_INSTANCE,
    REPORTING_CONTROLLER_MULTIKUEUE,
)
from cluster_inventory.api.constants import (
    FIELD_MANAGER_MULTIKUEUE as FIELD_MANAGER,
)
from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import Result
from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.integrations.sync._assignment import Assignment
from cluster_inventory.integrations.sync._mirror import MirrorOptions, ProfileMirror
from cluster_inventory.integrations.sync._ownership import (
    ANNOTATION_FINGERPRINT,
    LABEL_MANAGED_BY,
    fingerprint,
)
from cluster_inventory.kube.events import record_event

__all__ = [
    "DEFAULT_NAMESPACE",
    "FEATURE_GATE",
    "FIELD_MANAGER",
    "LEASE_NAME",
    "MAX_CONFIG_CLUSTERS",
    "MULTIKUEUE_CLUSTERS",
    "MULTIKUEUE_CONFIGS",
    "ConfigTooLarge",
    "MultiKueueSync",
    "default_instance",
    "kueue_configuration",
    "render_multikueue_cluster",
    "render_multikueue_config",
]

#: ``kueue.x-k8s.io/v1beta2`` MultiKueueCluster (cluster-scoped; v1beta2 is the storage
#: version, v1beta1 would need Kueue's conversion webhook).
MULTIKUEUE_CLUSTERS = kube.Resource(
    group="kueue.x-k8s.io", version="v1beta2", plural="multikueueclusters", kind="MultiKueueCluster"
)
#: ``kueue.x-k8s.io/v1beta2`` MultiKueueConfig (cluster-scoped).
MULTIKUEUE_CONFIGS = kube.Resource(
    group="kueue.x-k8s.io", version="v1beta2", plural="multikueueconfigs", kind="MultiKueueConfig"
)
#: Kueue's namespace in a default install (its Configuration's ``namespace``).
DEFAULT_NAMESPACE = "kueue-system"
#: Leader-election Lease name.
LEASE_NAME = "cluster-inventory-multikueue"
#: The Kueue feature gate that makes MultiKueue read ClusterProfiles.
FEATURE_GATE = "MultiKueueClusterProfile"
#: Kueue's bound on ``MultiKueueConfig.spec.clusters`` (``maxItems`` in its CRD).
MAX_CONFIG_CLUSTERS = 20
_CONFIG_KEY = "\x00config"
_log = logging.getLogger("cluster_inventory.integrations.sync.multikueue")


class ConfigTooLarge(ValueError):
    """More MultiKueueClusters than a MultiKueueConfig may list (1 to 20).

    Attributes:
        name: The MultiKueueConfig.
        count: How many clusters it would list.
    """

    def __init__(self, name: str, count: int) -> None:
        super().__init__(
            f"MultiKueueConfig {name}: spec.clusters would list {count} MultiKueueClusters; "
            f"Kueue allows 1 to {MAX_CONFIG_CLUSTERS} (narrow the profiles with a label "
            "selector or run one sync per config)"
        )
        self.name = name
        self.count = count


def default_instance(config_name: str | None) -> str:
    """The instance a MultiKueue sync is unless named: its config name, else ``default``.

    ``multikueue sync --config-name fleet`` is instance ``fleet``, and so is a
    :class:`MultiKueueSync` built with ``config_name="fleet"``: each keeps its own
    MultiKueueClusters and MultiKueueConfig, and one takes over the other's objects.
    """
    return config_name or DEFAULT_SYNC_INSTANCE


def render_multikueue_cluster(profile: Mapping[str, Any]) -> dict[str, Any]:
    """The MultiKueueCluster for one profile of Kueue's namespace. Pure.

    Args:
        profile: The ClusterProfile.

    Returns:
        A cluster-scoped object named after the profile with only
        ``spec.clusterSource.clusterProfileRef.name`` (exactly one source, as the CRD's CEL
        rule demands) and an annotation naming the profile.
    """
    view = ProfileView.of(profile)
    return {
        "apiVersion": MULTIKUEUE_CLUSTERS.api_version,
        "kind": MULTIKUEUE_CLUSTERS.kind,
        "metadata": {"name": view.name, "annotations": {ANNOTATION_PROFILE: view.key}},
        "spec": {"clusterSource": {"clusterProfileRef": {"name": view.name}}},
    }


def render_multikueue_config(
    name: str, clusters: Sequence[str], *, instance: str = DEFAULT_SYNC_INSTANCE
) -> dict[str, Any]:
    """A MultiKueueConfig listing ``clusters`` (sorted, so an unchanged set writes nothing).

    Args:
        name: The MultiKueueConfig name (an AdmissionCheck's ``parameters`` names it).
        clusters: MultiKueueCluster names.
        instance: The sync instance writing it (its ownership label).

    Returns:
        The object, with our ownership label and a fingerprint.

    Raises:
        ConfigTooLarge: More than 20 clusters (Kueue's limit); the count is in the message.
        ValueError: No cluster (Kueue needs at least one).
    """
    names = sorted(set(clusters))
    if len(names) > MAX_CONFIG_CLUSTERS:
        raise ConfigTooLarge(name, len(names))
    if not names:
        raise ValueError(f"MultiKueueConfig {name}: spec.clusters needs at least one cluster")
    meta: dict[str, Any] = {
        "name": name,
        "labels": {LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_SYNC_INSTANCE: instance},
    }
    body = {
        "apiVersion": MULTIKUEUE_CONFIGS.api_version,
        "kind": MULTIKUEUE_CONFIGS.kind,
        "metadata": meta,
        "spec": {"clusters": names},
    }
    meta["annotations"] = {ANNOTATION_FINGERPRINT: fingerprint(body)}
    return body


def kueue_configuration(
    providers: ProviderConfig, *, namespace: str = DEFAULT_NAMESPACE
) -> dict[str, Any]:
    """The Kueue Configuration fragment that lets MultiKueue use ``providers``' plugins.

    Args:
        providers: The consumer's provider file (its plugins must be in Kueue's image).
        namespace: Kueue's namespace (where it reads ClusterProfiles).

    Returns:
        ``{apiVersion, kind, namespace, featureGates: {MultiKueueClusterProfile: true},
        multiKueue: {clusterProfile: {accessProviders: [{name, execConfig}]}}}`` in the
        ``config.kueue.x-k8s.io/v1beta2`` Configuration's field names; ``execConfig`` is the
        kubeconfig ``ExecConfig`` (``env`` as a list of ``{name, value}``). Providers without
        an exec config are left out.
    """
    entries = []
    for provider in providers.providers:
        ec = provider.exec_config
        if ec is None:
            continue
        exec_config: dict[str, Any] = {
            "apiVersion": ec.api_version,
            "command": ec.command,
            "args": list(ec.args),
            "provideClusterInfo": ec.provide_cluster_info,
            "interactiveMode": "Never",
        }
        if ec.env:
            exec_config["env"] = [{"name": e.name, "value": e.value} for e in ec.env]
        if ec.install_hint:
            exec_config["installHint"] = ec.install_hint
        entries.append({"name": provider.name, "execConfig": exec_config})
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": namespace,
        "featureGates": {FEATURE_GATE: True},
        "multiKueue": {"clusterProfile": {"accessProviders": entries}},
    }


class MultiKueueSync(ProfileMirror):
    """Keep one MultiKueueCluster per ClusterProfile of Kueue's namespace.

    Args:
        hub: API client of the hub (where Kueue runs; the caller closes it).
        kueue_namespace: Kueue's namespace: the only one whose profiles Kueue reads.
        config_name: Also keep a MultiKueueConfig of this name listing every cluster
            (None: none).
        **options: :class:`MirrorOptions` (label selector, workers, registry, identity, and
            ``instance``: this sync's name; its MultiKueueClusters and MultiKueueConfig carry
            it, and it never updates or deletes another instance's, so two syncs with
            different configs over disjoint profiles each keep their own; by default
            :func:`default_instance` of the config name, as ``multikueue sync`` names it, so
            the command run with the same ``--config-name`` is the same instance).
    """

    resource = MULTIKUEUE_CLUSTERS
    target_namespace = None
    field_manager = FIELD_MANAGER
    controller = "multikueue-sync"
    reporting_controller = REPORTING_CONTROLLER_MULTIKUEUE

    def __init__(
        self,
        hub: kube.ApiClient,
        *,
        kueue_namespace: str = DEFAULT_NAMESPACE,
        config_name: str | None = None,
        **options: Unpack[MirrorOptions],
    ) -> None:
        self.kueue_namespace = kueue_namespace
        self.config_name = config_name
        options.setdefault("instance", default_instance(config_name))
        self._selector = options.get("label_selector")
        self._said_empty = False
        super().__init__(hub, namespaces=[kueue_namespace], **options)

    async def wait_synced(self) -> None:
        """Wait until listed once; say so when Kueue's namespace holds no profile to serve.

        Kueue reads ClusterProfiles only in its own namespace: a sync pointed at a namespace
        that is not an inventory (the default ``kueue-system`` on a hub whose inventories are
        elsewhere) would otherwise run, healthy, writing nothing.

        Raises:
            KubeAPIError: A first LIST was refused (e.g. 404: a CRD is missing; 403: RBAC).
        """
        await super().wait_synced()
        if not self.profiles() and not self._said_empty:
            self._said_empty = True  # once: wait_synced is asked again (readiness)
            matching = f" matching {self._selector!r}" if self._selector else ""
            _log.warning(
                "Kueue's namespace %s holds no ClusterProfile%s: no MultiKueueCluster to "
                "keep until one appears. Kueue reads ClusterProfiles only in its own "
                "namespace (--kueue-namespace), so that namespace must be an inventory of "
                "the cluster manager (label it %s=SET)",
                self.kueue_namespace,
                matching,
                LABEL_CLUSTER_SET,
            )

    def assign(self, profiles: Sequence[Mapping[str, Any]]) -> dict[str, Assignment]:
        """One MultiKueueCluster per profile, named after it. Pure."""
        views = map(ProfileView.of, profiles)
        return {v.name: Assignment(profile=v.key, display_name=v.name) for v in views}

    def render(
        self, profile: Mapping[str, Any], name: str, assignment: Assignment
    ) -> dict[str, Any]:
        """See :func:`render_multikueue_cluster`."""
        return render_multikueue_cluster(profile)

    def plan_changed(self) -> None:
        """The set of clusters changed: the MultiKueueConfig lists them."""
        if self.config_name is not None:
            self.queue.add(_CONFIG_KEY)

    def targets_changed(self) -> None:
        """A MultiKueueCluster of ours appeared or went: the config lists only those."""
        self.plan_changed()

    async def reconcile_extra(self, key: str) -> Result | None:
        """Keep the MultiKueueConfig listing every MultiKueueCluster this sync keeps."""
        if key != _CONFIG_KEY or self.config_name is None:
            return None
        name = self.config_name
        # Decided once every profile's cluster is made or known to be taken by someone else's
        # object (not ours to list): counting only the clusters made so far would fill the
        # config up to 20 and stop there instead of reporting that 21 do not fit. Each
        # cluster made or found taken queues this again.
        wanted = set(self.plan) - self.blocked
        if wanted - set(self.kept()):
            return None
        try:
            stored: dict[str, Any] | None = await kube.get(self.hub, MULTIKUEUE_CONFIGS, name)
        except kube.NotFoundError:
            stored = None
        if stored is not None and not self.owns(stored):
            await self._report_config(
                f"MultiKueueConfig {name} exists and is not this sync instance's "
                f"({self.instance!r}); left alone"
            )
            return None
        if not wanted:
            if stored is not None:
                self.writes += 1
                await kube.delete(self.hub, MULTIKUEUE_CONFIGS, name)
            return None
        try:
            body = render_multikueue_config(name, sorted(wanted), instance=self.instance)
        except ConfigTooLarge as exc:
            await self._report_config(str(exc))
            return None
        current = objects.annotations_of(stored or {}).get(ANNOTATION_FINGERPRINT)
        if current == objects.annotations_of(body)[ANNOTATION_FINGERPRINT]:
            return None
        self.writes += 1
        await kube.apply(self.hub, MULTIKUEUE_CONFIGS, body, field_manager=FIELD_MANAGER)
        return None

    async def _report_config(self, note: str) -> None:
        # An Event about a cluster-scoped object needs some namespace: Kueue's is where its
        # operators look, and the only one this controller may write Events to.
        _log.error("%s", note, extra={"object": self.config_name})
        await record_event(
            self.hub,
            {
                "apiVersion": MULTIKUEUE_CONFIGS.api_version,
                "kind": MULTIKUEUE_CONFIGS.kind,
                "name": self.config_name,
                "namespace": self.kueue_namespace,
            },
            reason="ConfigNotWritten",
            note=note,
            action="Sync",
            controller=self.reporting_controller,
            instance=self.identity,
            dedupe=note,
        )
