"""kube-state-metrics-style series of the ClusterProfiles a process holds, for Prometheus.

``kube_node_status_condition{node,condition,status}``'s shape, for profiles: three series per
condition (``status`` ``true``, ``false``, ``unknown``; 1 on the current one), one for its
current reason and one for its last transition time, and one info series per profile
(``kube_node_info``'s shape: member id, version, cluster manager, access mode). Built at
scrape time from the caller's
own view of the profiles (an informer cache, nothing fetched), as kube-state-metrics builds
its series from its informers, so a replica exports exactly the profiles it holds and no
series is left behind for a profile that went. Prometheus keeps the history
(``docs/observability.md``); ``cluster-inventory availability`` reads it back.

:class:`ProfileSeries` is the one collector of a registry: several holders of profiles in one
process (two cluster managers, a test's replicas) each add their view to it, so each family
is exported once however many there are.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    METRIC_PROFILE_CONDITION,
    METRIC_PROFILE_CONDITION_REASON,
    METRIC_PROFILE_INFO,
    PROFILE_CONDITION_STATUSES,
)
from cluster_inventory.api.views import ProfileView

__all__ = ["METRIC_PROFILE_CONDITION_TRANSITION", "ProfileConditionCollector", "ProfileSeries"]

#: What a holder of profiles gives :class:`ProfileSeries`: the profiles to describe now.
ProfilesNow = Callable[[], Iterable[ProfileView]]

#: Unix seconds of a condition's ``lastTransitionTime`` (labels ``namespace``, ``name``,
#: ``condition``); absent when the condition has none.
METRIC_PROFILE_CONDITION_TRANSITION = (
    "cluster_inventory_cluster_profile_condition_last_transition_time_seconds"
)
_WORDS = {"True": "true", "False": "false", "Unknown": "unknown"}


class ProfileConditionCollector(Collector):
    """A Prometheus collector of profiles' conditions, read from ``profiles()`` per scrape.

    Register it in a registry (``registry.register(collector)``); nothing is computed
    until a scrape.

    Args:
        profiles: Returns the profiles to describe now (e.g. those of an informer cache
            this replica owns); called once per scrape.
        conditions: Only these condition types (None: every condition a profile has).
    """

    def __init__(
        self,
        profiles: Callable[[], Iterable[ProfileView]],
        conditions: Sequence[str] | None = None,
    ) -> None:
        self._profiles = profiles
        self._conditions = None if conditions is None else frozenset(conditions)

    def describe(self) -> list[Metric]:
        """Nothing: the series exist only at scrape time (registering calls no ``collect``)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The four families for every profile ``profiles()`` returns now.

        A status other than ``True``/``False``/``Unknown`` (a malformed profile) counts as
        ``unknown``: the series stay three per condition, one of them 1.
        """
        status = GaugeMetricFamily(
            METRIC_PROFILE_CONDITION,
            "The condition of a ClusterProfile: 1 on its current status.",
            labels=["namespace", "name", "condition", "status"],
        )
        reason = GaugeMetricFamily(
            METRIC_PROFILE_CONDITION_REASON,
            "The current reason of a ClusterProfile's condition (1).",
            labels=["namespace", "name", "condition", "reason"],
        )
        transition = GaugeMetricFamily(
            METRIC_PROFILE_CONDITION_TRANSITION,
            "Unix time of a ClusterProfile condition's lastTransitionTime.",
            labels=["namespace", "name", "condition"],
        )
        info = GaugeMetricFamily(
            METRIC_PROFILE_INFO,
            "A ClusterProfile's member id, Kubernetes version, cluster manager and access mode "
            "(probe: the cluster manager reaches the member; pull: its agent reports) (1).",
            labels=["namespace", "name", "member_id", "version", "manager", "access_mode"],
        )
        for view in self._profiles():
            info.add_metric(
                [
                    view.namespace,
                    view.name,
                    view.member_id or "",
                    view.version,
                    view.cluster_manager or view.manager_label,
                    view.access_mode,
                ],
                1,
            )
            for kind, condition in view.conditions.items():
                if self._conditions is not None and kind not in self._conditions:
                    continue
                now = _WORDS.get(condition.status, "unknown")
                for word in PROFILE_CONDITION_STATUSES:
                    status.add_metric([view.namespace, view.name, kind, word], word == now)
                if condition.reason:
                    reason.add_metric([view.namespace, view.name, kind, condition.reason], 1)
                if condition.last_transition is not None:
                    transition.add_metric(
                        [view.namespace, view.name, kind], condition.last_transition.timestamp()
                    )
        yield status
        yield reason
        yield transition
        yield info


class ProfileSeries(kube.PerRegistry):
    """The one :class:`ProfileConditionCollector` of a registry, over every view added to it.

    Get it with ``ProfileSeries.for_registry(registry)``; each holder of profiles calls
    :meth:`add` with its view and the returned function when it stops holding them. Two
    views must not hold one profile (the caller's promise: each replica adds only what it
    owns), or its series would be exported twice.
    """

    def __init__(self) -> None:
        self._views: dict[int, ProfilesNow] = {}
        self._ids = itertools.count()
        #: The registered collector (every view's profiles, in the order they were added).
        self.collector = ProfileConditionCollector(self._profiles)

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ProfileSeries:
        """A new set, its collector registered in ``registry``."""
        series = cls()
        registry.register(series.collector)
        return series

    def add(self, profiles: ProfilesNow) -> Callable[[], None]:
        """Export ``profiles()`` at each scrape until the returned function is called.

        Args:
            profiles: Returns the profiles to describe now (called once per scrape).

        Returns:
            Stops exporting them (safe to call twice).
        """
        key = next(self._ids)
        self._views[key] = profiles
        return lambda: self._views.pop(key, None) and None

    def _profiles(self) -> Iterator[ProfileView]:
        for profiles in list(self._views.values()):
            yield from profiles()
