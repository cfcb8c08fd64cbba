"""The informer against a real API server: paged lists, events and indexers."""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.kube.informer import ADDED, DELETED, MODIFIED, Informer
from tests.support.waiting import eventually


def configmap(ns: str, name: str, team: str = "a") -> dict:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {"team": team}},
        "data": {"v": "1"},
    }


async def test_paged_list_events_and_indexer(hub, test_namespace) -> None:
    async with await hub.client() as client:
        for i in range(5):
            await kube.create(
                client, kube.CONFIG_MAPS, configmap(test_namespace, f"cm{i}", "a" if i % 2 else "b")
            )
        events: list[tuple[str, str]] = []
        informer = Informer(
            client, kube.CONFIG_MAPS, namespace=test_namespace, page_size=2, label_selector="team"
        )
        informer.add_indexer("team", lambda o: [o["metadata"]["labels"]["team"]])
        informer.add_handler(lambda kind, obj, old: events.append((kind, obj["metadata"]["name"])))
        async with informer:
            await informer.wait_synced()
            assert informer.has_synced
            assert sorted(informer.keys()) == [f"{test_namespace}/cm{i}" for i in range(5)]
            assert informer.lists == 1
            assert [o["metadata"]["name"] for o in informer.by_index("team", "a")] == ["cm1", "cm3"]
            await kube.apply(
                client,
                kube.CONFIG_MAPS,
                {**configmap(test_namespace, "cm1", "b"), "data": {"v": "2"}},
                field_manager="t",
            )
            await kube.delete(client, kube.CONFIG_MAPS, "cm0", namespace=test_namespace)

            async def settled() -> bool:
                return (MODIFIED, "cm1") in events and (DELETED, "cm0") in events

            await eventually(settled, what="watch events")
            assert [o["metadata"]["name"] for o in informer.by_index("team", "a")] == ["cm3"]
            assert informer.get(f"{test_namespace}/cm0") is None
        assert sum(1 for kind, _ in events if kind == ADDED) == 5


async def test_resync_replays_every_object_as_modified(hub, test_namespace) -> None:
    async with await hub.client() as client:
        await kube.create(client, kube.CONFIG_MAPS, configmap(test_namespace, "only"))
        replays: list[str] = []
        informer = Informer(client, kube.CONFIG_MAPS, namespace=test_namespace, resync_period=0.2)
        informer.add_handler(
            lambda kind, obj, old: (
                kind == MODIFIED and obj is old and replays.append(obj["metadata"]["name"])
            )
        )
        async with informer:
            await informer.wait_synced()

            async def twice() -> bool:
                return replays.count("only") >= 2

            await eventually(twice, timeout=10, what="two resyncs")


async def test_metadata_only_informer_never_holds_a_secret_value(hub, test_namespace) -> None:
    value = "metadata-only-informer-must-not-see-this"
    secret = {
        "metadata": {"name": "s1", "namespace": test_namespace, "labels": {"team": "a"}},
        "stringData": {"token": value},
    }
    async with await hub.client() as client:
        await kube.create(client, kube.SECRETS, secret)
        seen: list[dict] = []
        informer = Informer(
            client,
            kube.SECRETS,
            namespace=test_namespace,
            label_selector="team",
            metadata_only=True,
        )
        informer.add_handler(lambda kind, obj, old: seen.append(obj))
        async with informer:
            await informer.wait_synced()
            (listed,) = informer.items()
            assert listed["metadata"]["labels"] == {"team": "a"}
            # Watched changes come as metadata too.
            await kube.apply(
                client,
                kube.SECRETS,
                {**secret, "metadata": {**secret["metadata"], "annotations": {"n": "2"}}},
                field_manager="t",
            )
            await eventually(
                lambda: (
                    informer.get(f"{test_namespace}/s1")["metadata"].get("annotations")
                    == {"n": "2"}
                ),
                what="the watched change",
            )
        assert len(seen) >= 2
        for obj in seen:
            assert set(obj) <= {"apiVersion", "kind", "metadata"}, obj
            assert value not in str(obj)
