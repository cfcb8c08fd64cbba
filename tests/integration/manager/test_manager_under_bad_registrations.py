"""The bad-input campaign against a running cluster manager (issue 22).

Good members are registered; then hypothesis-generated bad registration Secrets arrive, and
hostile edits of a good one. The good members' ClusterProfiles and token Secrets are never
deleted or rewritten (a watch on both records every DELETED event for the whole test),
every bad Secret gets a Warning Event naming the Secret and the field, and no credential
marker reaches an Event or a log record.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cluster_inventory import kube
from cluster_inventory.kube.informer import DELETED, Informer
from cluster_inventory.manager import RegistrationError, parse_registration_secret
from tests.support.data.bad_input import CAMPAIGN, MARKER, leaked, registration_secrets
from tests.support.hub.manager import Harness
from tests.support.waiting import eventually

#: Bad Secrets created, and hostile edits of a good one (each edit waits for its Event).
BATCH, EDITS = 12, 4


def _draw(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy``, the same on every run."""
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn[:count]


def _expected_error(secret: dict[str, Any]) -> RegistrationError | None:
    try:
        parse_registration_secret(secret)
    except RegistrationError as exc:
        return exc
    return None


def _found_before(namespace: str) -> list[tuple[dict[str, Any], list[str]]]:
    """Bad Secrets that broke the manager before the campaign's fixes, kept in the batch."""

    def secret(annotations: dict[str, str], kubeconfig: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "x",
                "namespace": namespace,
                "labels": {"cluster-inventory.dev/registration": "true"},
                "annotations": {"cluster-inventory.dev/clustersets": "prod", **annotations},
            },
            "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
        }

    return [
        # libyaml's loader overflowed the C stack on this: the manager died of SIGSEGV.
        (secret({}, "[" * 60_000 + "]" * 60_000), []),
        # A note of 300 emoji is 1,200 bytes: the Event was refused, so nothing was reported.
        (secret({"cluster-inventory.dev/clustersets": "\U0001f600" * 300}, "a: 1"), []),
    ]


async def _events(h: Harness, name: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=h.namespace)
    return [e for e in listed["items"] if (e.get("regarding") or {}).get("name") == name]


async def _event_for(h: Harness, name: str, error: RegistrationError) -> dict[str, Any] | None:
    for event in await _events(h, name):
        note = event.get("note") or ""
        if event.get("reason") == "InvalidRegistration" and note == str(error)[: len(note)]:
            return event
    return None


async def _healthy(h: Harness, ns: str, name: str) -> bool:
    cond = await h.condition(ns, name, "ControlPlaneHealthy")
    return cond is not None and cond["status"] == "True"


async def _token_secret(h: Harness, ns: str, name: str) -> dict[str, Any] | None:
    try:
        secret = await kube.get(h.hub_client, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return None
    return secret if (secret.get("data") or {}).get("token") else None


async def test_bad_registrations_never_touch_good_members(harness: Harness, caplog) -> None:
    h = harness
    caplog.set_level("DEBUG", logger="cluster_inventory")
    ns = await h.inventory("prod", "prod")
    good = ("alpha", "beta")
    for index, name in enumerate(good):
        await h.register(name, h.member(index), ["prod"])
    for name in good:
        await eventually(lambda n=name: _healthy(h, ns, n), what=f"{name} healthy", timeout=60)
        await eventually(lambda n=name: _token_secret(h, ns, n), what=f"{name} token")
    profiles_before = {n: await h.profile(ns, n) for n in good}
    tokens_before = {n: await _token_secret(h, ns, n) for n in good}

    lost: list[str] = []

    def watch(kind: str) -> Any:
        def on_event(event: str, obj: dict[str, Any], _: dict[str, Any] | None) -> None:
            if event == DELETED and obj["metadata"]["name"] in good:
                lost.append(f"{kind} {obj['metadata']['name']}")
                CAMPAIGN.lost[f"manager: {kind}"] += 1

        return on_event

    informers = [
        Informer(h.hub_client, kube.CLUSTER_PROFILES, namespace=ns, name="test profiles"),
        Informer(h.hub_client, kube.SECRETS, namespace=ns, name="test token Secrets"),
    ]
    for informer, kind in zip(informers, ("ClusterProfile", "token Secret"), strict=True):
        informer.add_handler(watch(kind))
        informer.start()
    try:
        for informer in informers:
            await informer.wait_synced()

        # A batch of bad registration Secrets (those the API server stores at all).
        bad: list[tuple[str, RegistrationError]] = []
        markers: list[str] = []
        per_field: dict[str, int] = {}
        drawn = _draw(registration_secrets(namespace=h.namespace), BATCH * 8)
        for i, (secret, secrets) in enumerate([*_found_before(h.namespace), *drawn]):
            dotted = "." in secret["metadata"]["name"]
            name = f"bad.{i}" if dotted else f"bad-{i}"
            secret["metadata"]["name"] = name
            error = _expected_error(secret)
            if error is None or per_field.get(error.field, 0) >= BATCH // 2:
                continue  # a registration that parses is not this test's subject; vary fields
            per_field[error.field] = per_field.get(error.field, 0) + 1
            try:
                await kube.create(h.hub_client, kube.SECRETS, secret)
            except kube.KubeAPIError as exc:
                CAMPAIGN.record("manager (running)", f"refused by the API server ({exc.reason})")
                continue
            CAMPAIGN.record("manager (running)", f"RegistrationError {error.field}")
            bad.append((name, error))
            markers += secrets
            if len(bad) == BATCH:
                break
        assert len(bad) == BATCH

        # Hostile edits of a good member's Secret, one at a time: each is reported.
        edits = 0
        for secret, secrets in _draw(registration_secrets(namespace=h.namespace), EDITS * 4):
            secret["metadata"]["name"] = "alpha"
            error = _expected_error(secret)
            if error is None:
                continue
            try:
                await kube.apply(h.hub_client, kube.SECRETS, secret, field_manager="test")
            except kube.KubeAPIError as exc:
                CAMPAIGN.record("manager (running)", f"refused by the API server ({exc.reason})")
                continue
            CAMPAIGN.record("manager (running)", f"RegistrationError {error.field} (edit)")
            markers += secrets
            await eventually(
                lambda e=error: _event_for(h, "alpha", e), what=f"event for edit: {error}"
            )
            edits += 1
            if edits == EDITS:
                break
        assert edits == EDITS

        for name, error in bad:
            event = await eventually(
                lambda n=name, e=error: _event_for(h, n, e), what=f"event for {name}", timeout=60
            )
            assert event["type"] == "Warning"
            assert f"Secret {h.namespace}/{name}" in event["note"]
            assert error.field in event["note"]

        # The good members carry on, untouched.
        for name in good:
            assert await _healthy(h, ns, name)
            after = await h.profile(ns, name)
            before = profiles_before[name]
            assert after["metadata"]["uid"] == before["metadata"]["uid"]
            assert after["spec"] == before["spec"]
            assert after["status"].get("accessProviders") == before["status"].get("accessProviders")
            token = await _token_secret(h, ns, name)
            assert token is not None
            assert token["metadata"]["uid"] == tokens_before[name]["metadata"]["uid"]
            assert token["data"]["token"] == tokens_before[name]["data"]["token"]
        assert await h.profile_names(ns) == set(good)
        assert lost == []
    finally:
        for informer in informers:
            await informer.stop()

    notes = [e.get("note") or "" for e in (await _events_all(h))]
    assert not any(leaked(note, markers) for note in notes)
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "invalid registration" in logged
    assert MARKER not in logged
    assert not any(base64.b64encode(m.encode()).decode() in logged for m in markers)


async def _events_all(h: Harness) -> list[dict[str, Any]]:
    listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=h.namespace)
    items: list[dict[str, Any]] = listed["items"]
    return items
