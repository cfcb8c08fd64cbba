"""Status tells the truth: health flips with the member, properties follow by watch."""

from __future__ import annotations

import asyncio
import base64

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import CONDITION_PROPERTIES_SYNCED
from tests.support.hub.manager import Harness
from tests.support.waiting import eventually


async def _condition_is(
    h: Harness, ns: str, name: str, ctype: str, status: str, reason: str | None = None
):
    cond = await h.condition(ns, name, ctype)
    if cond is None or cond["status"] != status:
        return None
    if reason is not None and cond["reason"] != reason:
        return None
    return cond


async def _properties(h: Harness, ns: str, name: str) -> dict[str, str]:
    status = (await h.profile(ns, name)).get("status") or {}
    return {p["name"]: p["value"] for p in status.get("properties") or ()}


def _members_by_health(h: Harness, ns: str) -> dict[str, float]:
    """The cluster_inventory_profiles gauge of ``ns`` (what the unhealthy alert reads)."""
    return {
        sample.labels["control_plane_healthy"]: sample.value
        for metric in h.manager.metrics.profiles.collect()
        for sample in metric.samples
        if sample.labels["namespace"] == ns
    }


async def test_stopped_member_turns_unhealthy_and_recovers(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    member_name = list(h.fleet.members)[1]
    await h.register("beta", h.member(1), ["prod"])
    await eventually(
        lambda: _condition_is(h, ns, "beta", "ControlPlaneHealthy", "True"), what="healthy"
    )
    before = (await h.profile(ns, "beta"))["status"]
    assert _members_by_health(h, ns) == {"True": 1, "False": 0, "Unknown": 0}
    stopping = asyncio.ensure_future(h.fleet.stop_member(member_name))
    try:
        cond = await eventually(
            lambda: _condition_is(h, ns, "beta", "ControlPlaneHealthy", "False"), what="unhealthy"
        )
        await eventually(
            lambda: _members_by_health(h, ns) == {"True": 0, "False": 1, "Unknown": 0},
            what="the unhealthy member counted",
        )
        # Seen while kube-apiserver is still shutting down (it takes ~20 s with open watches):
        # the probe noticed the failing readyz, not just the closed port.
        detected_during_shutdown = not stopping.done()
        # Graceful shutdown first fails readyz ("[-]shutdown", or a 503 Status) and answers
        # 503 to other requests ("apiserver is shutting down"), then the port closes.
        assert cond["reason"] in (
            "ReadyzCheckFailed",
            "ReadyzFailed",
            "APIServerUnavailable",
            "APIServerUnreachable",
        ), cond
        # The drain lasts until the harness's SIGKILL at its stop timeout (20 s): the
        # manager's watches hold it open. Ending it now is the same outcome, sooner.
        await h.fleet.stop_member(member_name, kill=True)
        await stopping
        await eventually(
            lambda: _condition_is(
                h, ns, "beta", "ControlPlaneHealthy", "False", "APIServerUnreachable"
            ),
            what="unreachable once stopped",
        )
        during = (await h.profile(ns, "beta"))["status"]
        assert during["version"] == before["version"]  # last good version kept
    finally:
        await stopping
        await h.fleet.start_member(member_name)
    await eventually(
        lambda: _condition_is(h, ns, "beta", "ControlPlaneHealthy", "True"),
        timeout=30,
        what="recovered",
    )
    assert detected_during_shutdown


async def test_cluster_properties_propagate(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    name = f"region.{h.namespace}.example.com"
    long_name = f"blob.{h.namespace}.example.com"
    async with await h.member(0).client() as member:
        try:
            await kube.apply(
                member,
                kube.CLUSTER_PROPERTIES,
                {"metadata": {"name": name}, "spec": {"value": "eu-west-1"}},
                field_manager="test",
            )
            await eventually(lambda: _has(h, ns, "alpha", name, "eu-west-1"), what="created")
            await kube.apply(
                member,
                kube.CLUSTER_PROPERTIES,
                {"metadata": {"name": name}, "spec": {"value": "us-east-2 ✓"}},
                field_manager="test",
            )
            await eventually(lambda: _has(h, ns, "alpha", name, "us-east-2 ✓"), what="updated")
            prop = next(
                p
                for p in (await h.profile(ns, "alpha"))["status"]["properties"]
                if p["name"] == name
            )
            assert prop["lastObservedTime"]
            await kube.apply(
                member,
                kube.CLUSTER_PROPERTIES,
                {"metadata": {"name": long_name}, "spec": {"value": "x" * 2000}},
                field_manager="test",
            )
            cond = await eventually(
                lambda: _condition_is(h, ns, "alpha", CONDITION_PROPERTIES_SYNCED, "False"),
                what="too long reported",
            )
            assert long_name in cond["message"]
            assert long_name not in await _properties(h, ns, "alpha")
            await kube.delete(member, kube.CLUSTER_PROPERTIES, name)
            await eventually(lambda: _lacks(h, ns, "alpha", name), what="deleted")
        finally:
            await kube.delete(member, kube.CLUSTER_PROPERTIES, name)
            await kube.delete(member, kube.CLUSTER_PROPERTIES, long_name)


async def _has(h, ns, profile, name, value) -> bool:
    return (await _properties(h, ns, profile)).get(name) == value


async def _lacks(h, ns, profile, name) -> bool:
    return name not in await _properties(h, ns, profile)


async def test_status_is_not_rewritten_when_nothing_changed(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(
        lambda: _condition_is(h, ns, "alpha", "ControlPlaneHealthy", "True"), what="healthy"
    )
    await eventually(
        lambda: _condition_is(h, ns, "alpha", CONDITION_PROPERTIES_SYNCED, "True"), what="synced"
    )
    first = (await h.profile(ns, "alpha"))["metadata"]["resourceVersion"]
    probes = sum(m.probes for m in h.manager.members.values())
    await eventually(lambda: _more_probes(h, probes + 6), what="probes go on")
    assert (await h.profile(ns, "alpha"))["metadata"]["resourceVersion"] == first


async def _more_probes(h: Harness, n: int) -> bool:
    return sum(m.probes for m in h.manager.members.values()) >= n


@pytest.mark.parametrize(
    ("case", "field", "words"),
    [
        ("missing-key", "data.kubeconfig", "is missing"),
        ("malformed", "data.kubeconfig", ""),
        (
            "no-clusterset",
            "metadata.annotations[cluster-inventory.dev/clustersets]",
            "no cluster set",
        ),
    ],
)
async def test_bad_registration_is_reported_and_others_carry_on(
    harness: Harness, case, field, words
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    bad = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"bad-{case}",
            "namespace": h.namespace,
            "labels": {"cluster-inventory.dev/registration": "true"},
            "annotations": {}
            if case == "no-clusterset"
            else {"cluster-inventory.dev/clustersets": "prod"},
        },
        "stringData": {}
        if case == "missing-key"
        else {
            "kubeconfig": "clusters: [oops"
            if case == "malformed"
            else yaml.safe_dump(h.member(0).kubeconfig())
        },
    }
    await kube.create(h.hub_client, kube.SECRETS, bad)
    await eventually(
        lambda: _condition_is(h, ns, "alpha", "ControlPlaneHealthy", "True"), what="alpha healthy"
    )

    async def event():
        listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=h.namespace)
        return [e for e in listed["items"] if e["regarding"]["name"] == f"bad-{case}"]

    (found,) = await eventually(event, what="event")
    assert found["reason"] == "InvalidRegistration"
    assert f"Secret {h.namespace}/bad-{case}" in found["note"]
    assert field in found["note"]
    assert words in found["note"]
    assert await h.profile_names(ns) == {"alpha"}


async def test_unreachable_server_and_wrong_ca_become_conditions(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    unreachable = h.member(0).kubeconfig()
    unreachable["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    wrong_ca = h.member(0).kubeconfig()
    wrong_ca["clusters"][0]["cluster"]["certificate-authority-data"] = h.member(1).kubeconfig()[
        "clusters"
    ][0]["cluster"]["certificate-authority-data"]
    await h.register("down", h.member(0), ["prod"], kubeconfig=yaml.safe_dump(unreachable))
    await h.register("wrongca", h.member(0), ["prod"], kubeconfig=yaml.safe_dump(wrong_ca))
    down = await eventually(
        lambda: _condition_is(
            h, ns, "down", "ControlPlaneHealthy", "False", "APIServerUnreachable"
        ),
        what="unreachable",
    )
    assert "127.0.0.1:1" in down["message"]
    await eventually(
        lambda: _condition_is(
            h, ns, "wrongca", "ControlPlaneHealthy", "False", "CertificateInvalid"
        ),
        what="wrong CA",
    )
    await eventually(
        lambda: _condition_is(h, ns, "wrongca", "Joined", "False", "CertificateInvalid"),
        what="not joined",
    )
    await eventually(
        lambda: _condition_is(h, ns, "alpha", "ControlPlaneHealthy", "True"),
        what="alpha carries on",
    )


async def test_registration_whose_key_does_not_load_is_invalid_and_keeps_the_last_good(
    harness: Harness,
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(
        lambda: _condition_is(h, ns, "alpha", "ControlPlaneHealthy", "True"), what="alpha healthy"
    )
    broken = h.member(0).kubeconfig()
    broken["users"][0]["user"]["client-key-data"] = base64.b64encode(b"not a key").decode()
    text = base64.b64encode(yaml.safe_dump(broken).encode()).decode()
    for name in ("badkey", "alpha"):  # a new registration, and an edit of a good one
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "cluster-inventory.dev/registration",
            "metadata": {
                "name": name,
                "namespace": h.namespace,
                "labels": {"cluster-inventory.dev/registration": "true"},
                "annotations": {"cluster-inventory.dev/clustersets": "prod"},
            },
            "data": {"kubeconfig": text},
        }
        await kube.apply(h.hub_client, kube.SECRETS, secret, field_manager="test")

    async def events(name: str) -> list[dict]:
        listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=h.namespace)
        return [
            e
            for e in listed["items"]
            if e["regarding"]["name"] == name and e["reason"] == "InvalidRegistration"
        ]

    for name in ("badkey", "alpha"):
        (event,) = await eventually(lambda n=name: events(n), what=f"event for {name}")
        assert f"Secret {h.namespace}/{name}: data.kubeconfig:" in event["note"]
        assert "client certificate and key do not load" in event["note"]
    # No profile for the new one; the edited one keeps its last good registration.
    assert await h.profile_names(ns) == {"alpha"}
    assert await _condition_is(h, ns, "alpha", "ControlPlaneHealthy", "True")
