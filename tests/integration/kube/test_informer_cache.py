"""The shared informer cache on a real hub: one watch per distinct request, counted users."""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.kube.informer import strip_managed_fields
from tests.support.waiting import eventually


async def test_components_of_one_client_share_one_informer_until_the_last_stops(
    fleet, test_namespace
):
    async with await fleet.hub.client() as hub:
        cache = kube.InformerCache.for_client(hub)
        assert kube.InformerCache.for_client(hub) is cache
        first = cache.informer(kube.CONFIG_MAPS, namespaces=[test_namespace], name="first")
        second = cache.informer(kube.CONFIG_MAPS, namespaces=[test_namespace], name="second")
        other = cache.informer(
            kube.CONFIG_MAPS, namespaces=[test_namespace], transform=strip_managed_fields
        )
        assert first is second and other is not first
        seen: list[str] = []
        first.add_handler(lambda event, obj, old: seen.append(obj["metadata"]["name"]))
        first.start()
        second.start()
        await second.wait_synced()
        await first.stop()  # one user stops: the other still reads live objects
        await kube.create(
            hub,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "after-one-stop", "namespace": test_namespace}},
        )
        await eventually(lambda: second.get(f"{test_namespace}/after-one-stop") is not None)
        assert "after-one-stop" in seen
        await second.stop()  # the last user: the watch ends
        assert not any(i.running for i in first.informers)


async def test_one_kind_over_several_namespaces_reads_as_one(fleet, test_namespace):
    async with await fleet.hub.client() as hub:
        other_ns = f"{test_namespace}-b"
        await kube.create(hub, kube.NAMESPACES, {"metadata": {"name": other_ns}})
        try:
            for ns in (test_namespace, other_ns):
                await kube.create(
                    hub, kube.CONFIG_MAPS, {"metadata": {"name": "cm", "namespace": ns}}
                )
            both = kube.InformerCache(hub).informer(
                kube.CONFIG_MAPS, namespaces=[test_namespace, other_ns]
            )
            both.start()
            await both.wait_synced()
            assert both.has_synced
            assert both.get(f"{other_ns}/cm") is not None
            assert {k for k in both.keys() if k.endswith("/cm")} == {
                f"{test_namespace}/cm",
                f"{other_ns}/cm",
            }
            await both.stop()
        finally:
            await kube.delete(hub, kube.NAMESPACES, other_ns)
