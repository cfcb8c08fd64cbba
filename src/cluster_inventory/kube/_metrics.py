"""One set of Prometheus collectors per registry.

prometheus-client refuses to register a metric name twice in one registry, yet a process
may build many work queues, credential caches or managers. Each kind builds its collectors
once per registry through :func:`collectors_for` and shares them (telling instances apart
with labels such as the queue name).

A set is declared, not built by hand: a frozen dataclass deriving from :class:`PerRegistry`
whose fields are :func:`metric` (one collector: kind, name, help, labels, buckets) or
:func:`collectors` (another set, shared), so a collector is written once, in one line of
declaration, and :meth:`PerRegistry.create` builds them all in field order.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, Summary

__all__ = [
    "NO_RESPONSE_CODE",
    "RECONCILE_RESULTS",
    "PerRegistry",
    "ReconcileMetrics",
    "RestClientMetrics",
    "collectors",
    "collectors_for",
    "metric",
]

T = TypeVar("T")
# Keyed by the registry object itself (weakly): an id() could be reused by a new registry.
_built: weakref.WeakKeyDictionary[CollectorRegistry, dict[Any, Any]] = weakref.WeakKeyDictionary()


def collectors_for(
    build: Callable[[CollectorRegistry], T], registry: CollectorRegistry = REGISTRY
) -> T:
    """Return ``build(registry)``, calling ``build`` only the first time for that registry."""
    per_registry = _built.setdefault(registry, {})
    if build not in per_registry:
        per_registry[build] = build(registry)
    found: T = per_registry[build]
    return found


_METRIC = "cluster_inventory.metric"
_SET = "cluster_inventory.collectors"
Collector = Counter | Gauge | Histogram | Summary


@dataclass(frozen=True)
class _MetricSpec:
    kind: type[Collector]
    name: str
    documentation: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] | None

    def build(self, registry: CollectorRegistry) -> Collector:
        extra: dict[str, Any] = {} if self.buckets is None else {"buckets": self.buckets}
        return self.kind(self.name, self.documentation, self.labels, registry=registry, **extra)


def metric(
    kind: type[Collector],
    name: str,
    documentation: str,
    labels: Sequence[str] = (),
    *,
    buckets: Sequence[float] | None = None,
) -> Any:
    """A field of a :class:`PerRegistry` set: one collector, built by :meth:`~PerRegistry.create`.

    Args:
        kind: ``Counter``, ``Gauge``, ``Histogram`` or ``Summary`` (prometheus-client).
        name: The metric's name (a counter's ``_total`` is prometheus-client's to add).
        documentation: Its help text.
        labels: Its label names.
        buckets: A histogram's buckets (seconds, bytes, ...); None: the kind's default.
    """
    spec = _MetricSpec(
        kind, name, documentation, tuple(labels), None if buckets is None else tuple(buckets)
    )
    return dataclasses.field(metadata={_METRIC: spec})


def collectors(kind: type[PerRegistry]) -> Any:
    """A field of a :class:`PerRegistry` set holding another set (shared, ``for_registry``)."""
    return dataclasses.field(metadata={_SET: kind})


class PerRegistry:
    """Base of a set of collectors built once per registry (see :func:`collectors_for`).

    Subclasses are frozen dataclasses whose fields are :func:`metric` or :func:`collectors`.
    """

    @classmethod
    def create(cls, registry: CollectorRegistry) -> Self:
        """Register the collectors in ``registry`` (call :meth:`for_registry` instead).

        Raises:
            TypeError: A field is neither a :func:`metric` nor a :func:`collectors`.
        """
        built: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if _METRIC in f.metadata:
                built[f.name] = f.metadata[_METRIC].build(registry)
            elif _SET in f.metadata:
                built[f.name] = f.metadata[_SET].for_registry(registry)
            else:
                raise TypeError(f"{cls.__name__}.{f.name} is neither metric() nor collectors()")
        return cls(**built)

    @classmethod
    def for_registry(cls, registry: CollectorRegistry = REGISTRY) -> Self:
        """The collectors registered in ``registry`` (created on first use)."""
        return collectors_for(cls.create, registry)


#: controller-runtime's reconcile-time buckets (seconds).
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
#: ``result`` label values of ``controller_runtime_reconcile_total``.
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


@dataclass(frozen=True)
class ReconcileMetrics(PerRegistry):
    """controller-runtime's per-controller reconcile metrics (``pkg/internal/controller/metrics``).

    The names, labels and buckets are controller-runtime's, so its dashboards work for the
    cluster manager and for the multicluster runtime alike. Both share one set per registry.
    """

    total: Counter
    errors: Counter
    terminal_errors: Counter
    timeouts: Counter
    time: Histogram
    max_concurrent: Gauge
    active_workers: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ReconcileMetrics:
        """Create and register the collectors in ``registry`` (use :meth:`for_registry`)."""

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(name, doc, ["controller", *labels], registry=registry)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, ["controller"], registry=registry)

        return cls(
            total=counter(
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                "result",
            ),
            errors=counter(
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
            ),
            terminal_errors=counter(
                "controller_runtime_terminal_reconcile_errors_total",
                "Total number of terminal reconciliation errors per controller",
            ),
            timeouts=counter(
                "controller_runtime_reconcile_timeouts_total",
                "Total number of reconciliation timeouts per controller",
            ),
            time=Histogram(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                ["controller"],
                buckets=_RECONCILE_BUCKETS,
                registry=registry,
            ),
            max_concurrent=gauge(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
            ),
            active_workers=gauge(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
            ),
        )

    def start(self, controller: str, max_concurrent: int) -> None:
        """Set every counter of ``controller`` to zero so ``rate()`` works from the start."""
        for result in RECONCILE_RESULTS:
            self.total.labels(controller, result)
        for counter in (self.errors, self.terminal_errors, self.timeouts):
            counter.labels(controller)
        self.max_concurrent.labels(controller).set(max_concurrent)
        self.active_workers.labels(controller).set(0)


#: Buckets of Lease renewal lateness (seconds): a renewal is due every 2 s (shard) or 2 s
#: (leader retry period); lateness past the Lease duration (10-15 s) costs the Lease.
_LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0)


@dataclass(frozen=True)
class LeaseMetrics(PerRegistry):
    """How late this process renews its Leases (``lease``: ``shard``, ``leader`` or ``agent``).

    ``cluster_inventory_lease_renewal_lateness_seconds``: seconds between when a renewal was
    due and when its request started. Renewals run on their own loop
    (:mod:`cluster_inventory.kube.background`); this shows they keep their schedule when the
    rest of the process is busy.
    """

    lateness: Histogram = metric(
        Histogram,
        "cluster_inventory_lease_renewal_lateness_seconds",
        "Seconds between when a Lease renewal was due and when it started",
        ["lease"],
        buckets=_LATENESS_BUCKETS,
    )


#: client-go's ``rest_client_request_duration_seconds`` buckets (k8s.io/component-base
#: ``metrics/prometheus/restclient``).
_REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
#: The ``code`` of a request that got no response (client-go's and controller-runtime's).
NO_RESPONSE_CODE = "<error>"


@dataclass(frozen=True)
class RestClientMetrics(PerRegistry):
    """client-go's REST client metrics, for every request any client of ours sends.

    ``rest_client_requests_total{code,method,host}`` (controller-runtime registers it under
    that name; ``code`` is the HTTP status, ``<error>`` when no response came) and
    ``rest_client_request_duration_seconds{verb,host}`` (component-base's: seconds until the
    response, its body included unless streamed). ``host`` is the server's ``host:port``, so a
    manager has series per member it reaches; each 401 retry is a request of its own.
    """

    requests: Counter = metric(
        Counter,
        "rest_client_requests",
        "Number of HTTP requests, partitioned by status code, method, and host.",
        ["code", "method", "host"],
    )
    duration: Histogram = metric(
        Histogram,
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.",
        ["verb", "host"],
        buckets=_REQUEST_BUCKETS,
    )

    def observe(self, method: str, host: str, code: int | None, seconds: float) -> None:
        """Count one request: ``code`` None (or 0) when no response came."""
        self.requests.labels(str(code) if code else NO_RESPONSE_CODE, method, host).inc()
        self.duration.labels(method, host).observe(seconds)
