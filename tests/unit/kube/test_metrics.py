from prometheus_client import CollectorRegistry, Counter

from cluster_inventory.kube import collectors_for


def build(registry):
    return Counter("t_total", "test", registry=registry)


def test_collectors_are_built_once_per_registry():
    one, two = CollectorRegistry(), CollectorRegistry()
    assert collectors_for(build, one) is collectors_for(build, one)
    assert collectors_for(build, two) is not collectors_for(build, one)


def test_a_declared_set_builds_its_collectors_once_per_registry_in_field_order() -> None:
    from dataclasses import dataclass

    from prometheus_client import CollectorRegistry, Counter, Histogram

    from cluster_inventory import kube

    @dataclass(frozen=True)
    class Declared(kube.PerRegistry):
        reconcile: kube.ReconcileMetrics = kube.collectors(kube.ReconcileMetrics)
        writes: Counter = kube.metric(Counter, "test_declared_writes", "Writes", ["kind"])
        took: Histogram = kube.metric(Histogram, "test_declared_seconds", "Took", buckets=(1, 2))

    registry = CollectorRegistry()
    first = Declared.for_registry(registry)
    assert Declared.for_registry(registry) is first
    assert first.reconcile is kube.ReconcileMetrics.for_registry(registry)
    first.writes.labels("status").inc()
    first.took.observe(1.5)
    assert registry.get_sample_value("test_declared_writes_total", {"kind": "status"}) == 1
    assert registry.get_sample_value("test_declared_seconds_bucket", {"le": "2.0"}) == 1
    assert registry.get_sample_value("test_declared_seconds_bucket", {"le": "1.0"}) == 0


def test_a_field_that_declares_no_collector_is_named() -> None:
    from dataclasses import dataclass

    import pytest
    from prometheus_client import CollectorRegistry

    from cluster_inventory import kube

    @dataclass(frozen=True)
    class Undeclared(kube.PerRegistry):
        plain: int

    with pytest.raises(TypeError, match=r"Undeclared.plain is neither"):
        Undeclared.for_registry(CollectorRegistry())
