"""Registrations from Cluster API: every workload cluster becomes a member.

:class:`ClusterAPISource` watches ``cluster.x-k8s.io/v1beta2`` ``Cluster`` objects and the
kubeconfig Secrets Cluster API writes for them (``<cluster>-kubeconfig``, type
``cluster.x-k8s.io/secret``, key ``value``, label ``cluster.x-k8s.io/cluster-name``) in the
same namespace. Facts from the Cluster API contract (``sigs.k8s.io/cluster-api`` v1.13,
``api/core/v1beta2`` and ``util/secret``):

- a Cluster joins once ``status.initialization.controlPlaneInitialized`` is true; before
  that its profiles exist with ``Joined=False`` (reason ``ControlPlaneNotInitialized``) and
  no access provider, and the member is never contacted;
- the declared version (``spec.topology.version``) is published as the property
  :data:`PROPERTY_CAPI_VERSION`; the Kubernetes version still comes from the member;
- Cluster API rotates the kubeconfig Secret: a new version is picked up by the watch;
- a missing or broken Secret becomes a Warning Event on the Cluster (``InvalidRegistration``)
  and, while no good kubeconfig was ever read, the profiles' ``Joined=False`` condition
  (reasons ``KubeconfigSecretMissing``/``KubeconfigSecretInvalid``); after a good one, its
  last good credential is kept, so a bad rotation never takes a healthy member away.

Cluster sets come from the label :data:`LABEL_CAPI_CLUSTERSET` on the Cluster (one set; the
key is configurable), the annotation ``cluster-inventory.dev/clustersets`` (a comma list),
or fixed sets for every Cluster. A Cluster that names none is not a member.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_CAPI_CLUSTERSET
from cluster_inventory.kube.informer import strip_managed_fields
from cluster_inventory.manager.rules.capi_clusters import (
    CAPI_KUBECONFIG_KEY,
    CAPI_SECRET_TYPE,
    CLUSTERS,
    LABEL_CAPI_CLUSTER_NAME,
    PROPERTY_CAPI_VERSION,
    cluster_registration,
    control_plane_initialized,
    kubeconfig_secret_name,
    parse_capi_kubeconfig,
    strip_unused_data,
)
from cluster_inventory.manager.rules.registration import (
    Registration,
    RegistrationError,
)
from cluster_inventory.manager.sources.source import Snapshot

__all__ = [
    "CAPI_KUBECONFIG_KEY",
    "CAPI_SECRET_TYPE",
    "CLUSTERS",
    "LABEL_CAPI_CLUSTERSET",
    "LABEL_CAPI_CLUSTER_NAME",
    "PROPERTY_CAPI_VERSION",
    "ClusterAPISource",
    "cluster_registration",
    "parse_capi_kubeconfig",
    "strip_unused_data",
]


class ClusterAPISource:
    """Registrations from Cluster API ``Cluster`` objects and their kubeconfig Secrets.

    Implements :class:`~cluster_inventory.manager.sources.source.RegistrationSource`.

    Args:
        hub: Client of the cluster that holds the Clusters (the CAPI management cluster,
            which is the hub here).
        namespaces: Namespaces to watch; empty for all (then the manager needs to list and
            watch Clusters and Secrets cluster-wide: see docs/manager.md).
        clusterset_label: Label key on a Cluster naming its cluster set.
        default_clustersets: Cluster sets of a Cluster that names none (empty: such a
            Cluster is not a member).

    Only Secrets of type ``cluster.x-k8s.io/secret`` are watched, and the data of every one
    but the ``<cluster>-kubeconfig`` Secrets is dropped before it is cached.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        *,
        namespaces: Sequence[str] = (),
        clusterset_label: str = LABEL_CAPI_CLUSTERSET,
        default_clustersets: Sequence[str] = (),
    ) -> None:
        self.clusterset_label = clusterset_label
        self.default_clustersets = tuple(default_clustersets)
        scopes: Sequence[str | None] = list(namespaces) or [None]
        # From the hub client's shared cache (controller-runtime's mgr.GetCache()).
        cache = kube.InformerCache.for_client(hub)
        self.clusters = cache.informer(
            CLUSTERS,
            namespaces=scopes,
            name="Cluster API Clusters",
            transform=strip_managed_fields,
        )
        self.secrets = cache.informer(
            kube.SECRETS,
            namespaces=scopes,
            # By type only: a kubeconfig Secret made by hand without Cluster API's
            # cluster-name label is still the Cluster's (found by its name).
            field_selector=f"type={CAPI_SECRET_TYPE}",
            name="Cluster API Secrets",
            transform=strip_unused_data,
        )
        # Secret uid -> (resourceVersion, parsed); Cluster uid -> last good connection;
        # Cluster uid -> (what it was built from, registration or error, errors to report).
        self._parsed: dict[str, tuple[str, kube.ClusterConnection | RegistrationError]] = {}
        self._last_good: dict[str, kube.ClusterConnection] = {}
        self._built: dict[str, tuple[tuple[Any, ...], Any, list[RegistrationError]]] = {}

    def start(self, on_change: Callable[[], None]) -> None:
        """Start the informers; each event, and each read failing or recovering, is a change."""
        for informer in (self.clusters, self.secrets):
            informer.add_handler(lambda *_: on_change())
            informer.add_health_handler(on_change)
            informer.start()

    async def wait_synced(self) -> None:
        """Wait for the first LIST of Clusters and Secrets.

        Raises:
            SourceUnavailableError: A LIST was refused: the Cluster CRD is not installed (404;
                docs/manager.md says how to install it) or RBAC forbids it (403).
        """
        for informer in (*self.clusters.informers, *self.secrets.informers):
            try:
                await informer.wait_synced()
            except kube.NotFoundError as exc:
                hint = (
                    f"the hub serves no {CLUSTERS.plural}.{CLUSTERS.group}/{CLUSTERS.version} "
                    "(is the Cluster API Cluster CRD installed?)"
                    if informer in self.clusters.informers
                    else str(exc)
                )
                raise kube.SourceUnavailableError(
                    f"Cluster API source ({informer.name})", hint
                ) from None
            except kube.KubeAPIError as exc:
                raise kube.SourceUnavailableError(
                    f"Cluster API source ({informer.name})", str(exc)
                ) from None

    def failures(self) -> list[str]:
        """The informers' read failures, if any fails now."""
        return [
            f"{i.name}: {i.failure}"
            for i in (*self.clusters.informers, *self.secrets.informers)
            if i.failure is not None
        ]

    def _secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.secrets.get(f"{namespace}/{kubeconfig_secret_name(name)}")

    def _connection(
        self, cluster: Mapping[str, Any]
    ) -> tuple[kube.ClusterConnection | None, RegistrationError | None]:
        meta = objects.meta(cluster)
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        secret = self._secret(namespace, name)
        if secret is None:
            return None, RegistrationError(
                f"Cluster {namespace}/{name}",
                "kubeconfig Secret",
                f"Secret {namespace}/{kubeconfig_secret_name(name)} "
                f"(type {CAPI_SECRET_TYPE}) does not exist",
            )
        smeta = objects.meta(secret)
        uid, rv = str(smeta.get("uid")), str(smeta.get("resourceVersion"))
        cached = self._parsed.get(uid)
        if cached is None or cached[0] != rv:
            try:
                parsed: kube.ClusterConnection | RegistrationError = parse_capi_kubeconfig(secret)
            except RegistrationError as exc:
                parsed = exc
            cached = self._parsed[uid] = (rv, parsed)
        if isinstance(cached[1], RegistrationError):
            return None, cached[1]
        return cached[1], None

    def snapshot(self) -> Snapshot:
        """Registrations by member name, and the Clusters that are invalid with their error.

        A Cluster whose Secret breaks after a good read keeps its last good connection (and
        is reported); two Clusters of one name in different namespaces: the first in
        ``namespace/name`` order wins and the other is reported.
        """
        good: dict[str, Registration] = {}
        bad: list[tuple[dict[str, Any], RegistrationError]] = []
        seen_clusters: set[str] = set()
        clusters = sorted(
            self.clusters.items(),
            key=lambda c: (objects.meta(c).get("namespace", ""), objects.meta(c).get("name", "")),
        )
        for cluster in clusters:
            meta = objects.meta(cluster)
            if meta.get("deletionTimestamp"):
                continue  # being deleted: its profiles go now
            uid = str(meta.get("uid"))
            seen_clusters.add(uid)
            reg = self._cached_registration(cluster, uid, bad)
            if reg is None:
                continue
            if reg.name in good:
                bad.append(
                    (
                        cluster,
                        RegistrationError(
                            reg.source,
                            "metadata.name",
                            f"member name {reg.name!r} is already registered by "
                            f"{good[reg.name].source}; this Cluster gets no profile",
                        ),
                    )
                )
                continue
            good[reg.name] = reg
        for uid in [u for u in self._last_good if u not in seen_clusters]:
            del self._last_good[uid]
        for uid in [u for u in self._built if u not in seen_clusters]:
            del self._built[uid]
        live = {str(objects.meta(s).get("uid")) for s in self.secrets.items()}
        for uid in [u for u in self._parsed if u not in live]:
            del self._parsed[uid]
        return good, bad

    def _cached_registration(
        self, cluster: dict[str, Any], uid: str, bad: list[tuple[dict[str, Any], RegistrationError]]
    ) -> Registration | None:
        """``_registration``, rebuilt only when the Cluster, its Secret or last good changed."""
        meta = objects.meta(cluster)
        secret = self._secret(str(meta.get("namespace")), str(meta.get("name")))
        smeta = objects.meta(secret or {})
        inputs = (
            str(meta.get("resourceVersion")),
            str(smeta.get("uid")),
            str(smeta.get("resourceVersion")),
            self._last_good.get(uid),
        )
        cached = self._built.get(uid)
        if cached is None or cached[0] != inputs:
            errors: list[tuple[dict[str, Any], RegistrationError]] = []
            result: Registration | RegistrationError | None
            try:
                result = self._registration(cluster, uid, errors)
            except RegistrationError as exc:
                result = exc
            # The last good connection may have just been recorded: key on it as it is now.
            inputs = (*inputs[:3], self._last_good.get(uid))
            cached = self._built[uid] = (inputs, result, [e for _, e in errors])
        _, result, errors_only = cached
        for error in [*errors_only, result]:
            if isinstance(error, RegistrationError) and error.member is None:
                error.member = str(meta.get("name"))  # its profiles stay while it is invalid
        bad.extend((cluster, e) for e in errors_only)
        if isinstance(result, RegistrationError):
            bad.append((cluster, result))
            return None
        return result

    def _registration(
        self,
        cluster: dict[str, Any],
        uid: str,
        bad: list[tuple[dict[str, Any], RegistrationError]],
    ) -> Registration | None:
        def registration(
            conn: kube.ClusterConnection | None, not_ready: tuple[str, str] | None = None
        ) -> Registration | None:
            return cluster_registration(
                cluster,
                conn,
                clusterset_label=self.clusterset_label,
                default_clustersets=self.default_clustersets,
                not_ready=not_ready,
            )

        if not control_plane_initialized(cluster):
            return registration(
                None,
                (
                    "ControlPlaneNotInitialized",
                    "Cluster API reports status.initialization.controlPlaneInitialized "
                    "not true yet",
                ),
            )
        conn, error = self._connection(cluster)
        if conn is not None:
            self._last_good[uid] = conn
        elif error is not None:
            if registration(None) is None:
                return None  # not a member: its Secret does not matter
            bad.append((cluster, error))
            conn = self._last_good.get(uid)
            if conn is None:
                missing = error.field == "kubeconfig Secret"
                reason = "KubeconfigSecretMissing" if missing else "KubeconfigSecretInvalid"
                return registration(None, (reason, str(error)))
        return registration(conn)

    async def stop(self) -> None:
        """Stop the informers."""
        for informer in (self.clusters, self.secrets):
            await informer.stop()
