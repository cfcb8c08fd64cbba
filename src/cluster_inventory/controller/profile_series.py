"""kube-state-metrics-style series of the ClusterProfiles a process holds, for Prometheus.

``kube_node_status_condition{node,condition,status}``'s shape, for profiles: three series per
condition (``status`` ``true``, ``false``, ``unknown``; 1 on the current one), one for its
current reason and one for its last transition time. Built at scrape time from the caller's
own view of the profiles (an informer cache, nothing fetched), as kube-state-metrics builds
its series from its informers, so a replica exports exactly the profiles it holds and no
series is left behind for a profile that went. Prometheus keeps the history
(``docs/observability.md``); ``cluster-inventory availability`` reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cluster_inventory.api.constants import (
    METRIC_PROFILE_CONDITION,
    METRIC_PROFILE_CONDITION_REASON,
    PROFILE_CONDITION_STATUSES,
)
from cluster_inventory.api.views import ProfileView

__all__ = ["METRIC_PROFILE_CONDITION_TRANSITION", "ProfileConditionCollector"]

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
        """The three families for every profile ``profiles()`` returns now.

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
        for view in self._profiles():
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
