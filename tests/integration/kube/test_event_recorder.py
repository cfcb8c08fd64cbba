"""The Event recorder on a real API server: series counts, aggregation, the spam filter, restarts."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.kube.events import AGGREGATED_NOTE_PREFIX, EventRecorder, record_event

CONTROLLER = "cluster-inventory.dev/test"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def profile(namespace: str, name: str) -> dict[str, str]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "namespace": namespace,
        "name": name,
        "uid": f"uid-{name}",
    }


async def events_about(client: kube.ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(
        client, kube.EVENTS, namespace, field_selector=f"regarding.name={name}"
    )
    return list(listed["items"])


def count_of(event: dict[str, Any]) -> int:
    return int((event.get("series") or {}).get("count") or 1)


async def test_a_repeated_report_is_one_event_whose_series_counts(hub, test_namespace: str) -> None:
    clock = Clock()
    async with await hub.client() as client:
        recorder = EventRecorder(client, clock=clock, registry=CollectorRegistry())
        ref = profile(test_namespace, "member2")
        results = []
        for _ in range(5):
            clock.now += 1
            results.append(
                await recorder.record(
                    ref,
                    reason="ControlPlaneUnhealthy",
                    note="readyz: [-]etcd failed",
                    action="Probe",
                    controller=CONTROLLER,
                    instance="replica-0",
                )
            )
        assert results == [True] * 5
        (event,) = await events_about(client, test_namespace, "member2")
        assert event["series"]["count"] == 5
        assert event["note"] == "readyz: [-]etcd failed"
        assert event["reportingInstance"] == "replica-0"


async def test_ten_distinct_notes_aggregate_into_one_growing_event(
    hub, test_namespace: str
) -> None:
    clock = Clock()
    async with await hub.client() as client:
        recorder = EventRecorder(client, clock=clock, registry=CollectorRegistry())
        ref = profile(test_namespace, "member3")
        for i in range(14):
            clock.now += 10
            await recorder.record(
                ref,
                reason="PropertiesNotMirrored",
                note=f"property {i} refused",
                action="Mirror",
                controller=CONTROLLER,
                instance="replica-0",
            )
        events = await events_about(client, test_namespace, "member3")
        aggregated = [e for e in events if e["note"].startswith(AGGREGATED_NOTE_PREFIX)]
        assert len(events) == 10, [e["note"] for e in events]  # nine single, one aggregate
        (agg,) = aggregated
        assert agg["note"] == AGGREGATED_NOTE_PREFIX + "property 9 refused"
        assert count_of(agg) == 5  # notes 9 to 13
        assert sum(count_of(e) for e in events) == 14


async def test_the_spam_filter_holds_writes_back_and_the_next_write_carries_them(
    hub, test_namespace: str
) -> None:
    clock = Clock()
    registry = CollectorRegistry()
    async with await hub.client() as client:
        recorder = EventRecorder(client, clock=clock, registry=registry)
        ref = profile(test_namespace, "flappy")
        written = 0
        for _ in range(40):
            clock.now += 1
            written += await recorder.record(
                ref,
                reason="ControlPlaneUnhealthy",
                note="readyz failed",
                action="Probe",
                controller=CONTROLLER,
                instance="replica-0",
            )
        assert written == 25
        (event,) = await events_about(client, test_namespace, "flappy")
        assert event["series"]["count"] == 25
        clock.now += 300
        assert await recorder.record(
            ref,
            reason="ControlPlaneUnhealthy",
            note="readyz failed",
            action="Probe",
            controller=CONTROLLER,
            instance="replica-0",
        )
        (event,) = await events_about(client, test_namespace, "flappy")
        assert event["series"]["count"] == 41
        assert (
            registry.get_sample_value("cluster_inventory_events_total", {"result": "filtered"})
            == 15
        )


async def test_a_restarted_recorder_adds_nothing_then_counts_on_from_the_server(
    hub, test_namespace: str
) -> None:
    ref = profile(test_namespace, "restart")
    args: dict[str, Any] = {
        "reason": "InvalidRegistration",
        "note": "data.kubeconfig: not a kubeconfig",
        "action": "Register",
        "controller": CONTROLLER,
        "instance": "replica-0",
        "dedupe": "uid/12/not a kubeconfig",
    }
    async with await hub.client() as client:
        first = EventRecorder(client, registry=CollectorRegistry())
        assert await first.record(ref, **args)
        assert await first.record(ref, **args)
        again = EventRecorder(client, registry=CollectorRegistry())  # a new process
        assert not await again.record(ref, **args)
        (event,) = await events_about(client, test_namespace, "restart")
        assert event["series"]["count"] == 2
        assert await again.record(ref, **args)
        (event,) = await events_about(client, test_namespace, "restart")
        assert event["series"]["count"] == 3


async def test_record_event_keeps_its_signature_and_shares_one_recorder_per_client(
    hub, test_namespace: str
) -> None:
    ref = profile(test_namespace, "legacy")
    async with await hub.client() as client:
        for _ in range(3):
            await record_event(
                client,
                ref,
                reason="RenderFailed",
                note="cannot render",
                action="Render",
                controller=CONTROLLER,
                instance="replica-0",
                dedupe="uid-legacy/RenderFailed/cannot render",
            )
        (event,) = await events_about(client, test_namespace, "legacy")
        assert event["series"]["count"] == 3


async def test_a_refused_event_is_counted_and_never_raised(hub, test_namespace: str) -> None:
    registry = CollectorRegistry()
    async with await hub.client() as client:
        recorder = EventRecorder(client, registry=registry)
        written = await recorder.record(
            profile("no-such-namespace-here", "x"),
            reason="Anything",
            note="n",
            action="Probe",
            controller=CONTROLLER,
            instance="replica-0",
        )
    assert written is False
    assert registry.get_sample_value("cluster_inventory_events_total", {"result": "failed"}) == 1


async def test_a_member_varying_its_message_cannot_flood_the_hub_with_events(
    hub, test_namespace: str
) -> None:
    # As the attacker: a member controls its /readyz text, so every probe can carry a new
    # note (and a new dedupe key). Each caller of record_event shares the client's one
    # recorder: the notes aggregate after ten, and the writes stop at the spam burst.
    ref = profile(test_namespace, "hostile")
    async with await hub.client() as client:
        for i in range(200):
            note = f"readyz: [-]etcd failed: attempt {i} \x1b[2J"
            await record_event(
                client,
                ref,
                reason="ControlPlaneUnhealthy",
                note=note,
                action="Probe",
                controller=CONTROLLER,
                instance="replica-0",
                dedupe=note,
            )
        events = await events_about(client, test_namespace, "hostile")
    assert len(events) <= 10, f"{len(events)} Events for one object"
    assert sum(count_of(e) for e in events) <= 25  # writes held back after the burst
