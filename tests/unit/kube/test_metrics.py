from prometheus_client import CollectorRegistry, Counter

from cluster_inventory.kube import collectors_for


def build(registry):
    return Counter("t_total", "test", registry=registry)


def test_collectors_are_built_once_per_registry():
    one, two = CollectorRegistry(), CollectorRegistry()
    assert collectors_for(build, one) is collectors_for(build, one)
    assert collectors_for(build, two) is not collectors_for(build, one)
