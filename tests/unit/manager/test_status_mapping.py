import copy
import dataclasses
import datetime as dt

import pytest

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_TOKEN_EXPIRES, CONDITION_PROPERTIES_SYNCED
from cluster_inventory.kube import ClusterConnection
from cluster_inventory.manager.rules.status import (
    ConditionState,
    Observation,
    ObservedProperty,
    access_provider,
    build_status,
    probe_failure,
    readyz_condition,
    readyz_failure,
    seed_observation,
    status_matches,
)
from cluster_inventory.manager.rules.token_secrets import adoption_due, token_annotations

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=5)
PROVIDER = access_provider(
    "secretreader", ClusterConnection(server="https://m", ca_data=b"CA"), "c1"
)
HEALTHY = ConditionState("True", "APIServerReady", "ok")
DOWN = ConditionState("False", "APIServerUnreachable", "refused")


def cond(status, ctype):
    return next(c for c in status["conditions"] if c["type"] == ctype)


def test_transition_time_moves_only_when_status_changes():
    obs = Observation(version="v1.36.3", healthy=HEALTHY, joined=HEALTHY, properties=())
    first = build_status(obs, PROVIDER, None, T0)
    same = build_status(obs, PROVIDER, first, T1)
    assert same == first
    assert status_matches(same, first)
    down = build_status(Observation(healthy=DOWN, joined=HEALTHY), PROVIDER, first, T1)
    assert cond(down, "ControlPlaneHealthy")["lastTransitionTime"] == "2030-01-01T00:05:00Z"
    assert cond(down, "Joined")["lastTransitionTime"] == "2030-01-01T00:00:00Z"
    assert not status_matches(down, first)


def test_transient_failure_keeps_last_good_version_and_properties():
    prop = ObservedProperty("region", "eu", T0)
    good = build_status(
        Observation(version="v1.36.3", healthy=HEALTHY, joined=HEALTHY, properties=(prop,)),
        PROVIDER,
        None,
        T0,
    )
    bad = build_status(Observation(healthy=DOWN, joined=DOWN), PROVIDER, good, T1)
    assert bad["version"] == {"kubernetes": "v1.36.3"}
    assert bad["properties"] == good["properties"]


def test_properties_kept_exactly_and_long_values_reported():
    props = (
        ObservedProperty("b.example.com", "  spaced ✓ ", T0),
        ObservedProperty("a.example.com", "x" * 1025, T0),
    )
    status = build_status(
        Observation(healthy=HEALTHY, joined=HEALTHY, properties=props), PROVIDER, None, T0
    )
    assert status["properties"] == [
        {
            "name": "b.example.com",
            "value": "  spaced ✓ ",
            "lastObservedTime": "2030-01-01T00:00:00Z",
        }
    ]
    synced = cond(status, "cluster-inventory.dev/PropertiesSynced")
    assert synced["status"] == "False"
    assert "a.example.com" in synced["message"]


def test_access_provider_has_no_credential():
    conn = ClusterConnection(server="https://m", ca_data=b"CA", token="secret-token")
    entry = access_provider("secretreader", conn, "c1")
    assert "secret-token" not in str(entry)
    assert entry["cluster"]["extensions"][0]["extension"] == {"clusterName": "c1"}


def test_readyz_failure_names_the_failing_checks():
    body = "[+]ping ok\n[-]etcd failed: reason withheld\n[-]poststarthook/x failed: reason withheld\nreadyz check failed"
    reason, message = readyz_failure(body)
    assert reason == "ReadyzCheckFailed"
    assert message == "readyz checks failed: etcd, poststarthook/x"


def test_readyz_failure_of_a_draining_server_uses_the_status_message():
    body = (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"apiserver is shutting down","reason":"ServiceUnavailable","code":503}'
    )
    assert readyz_failure(body) == ("ReadyzFailed", "readyz failed: apiserver is shutting down")
    assert readyz_failure("") == ("ReadyzFailed", "readyz failed: no detail")
    assert readyz_failure("x\n" + "y" * 300) == ("ReadyzFailed", "readyz failed: " + "y" * 200)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, "[+]ping ok\nreadyz check passed", ("True", "APIServerReady")),
        (401, "Unauthorized", ("False", "Unauthorized")),
        (403, "forbidden", ("False", "Unauthorized")),
        (
            500,
            "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed",
            ("False", "ReadyzCheckFailed"),
        ),
        (
            503,
            '{"kind":"Status","message":"apiserver is shutting down","code":503}',
            ("False", "ReadyzFailed"),
        ),
    ],
)
def test_readyz_condition(status, body, expected):
    state = readyz_condition(status, body)
    assert (state.status, state.reason) == expected


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            kube.CertificateError(status=0, reason="CertificateInvalid", message="bad CA"),
            "CertificateInvalid",
        ),
        (kube.UnauthorizedError(status=401, reason="Unauthorized", message="no"), "Unauthorized"),
        (kube.ForbiddenError(status=403, reason="Forbidden", message="no"), "Forbidden"),
        (
            kube.ServerUnavailableError(status=0, reason="Unreachable", message="refused"),
            "APIServerUnreachable",
        ),
        (
            kube.ServerUnavailableError(
                status=503, reason="ServiceUnavailable", message="apiserver is shutting down"
            ),
            "APIServerUnavailable",
        ),
        (
            kube.ServerUnavailableError(status=429, reason="TooManyRequests", message="slow down"),
            "APIServerUnavailable",
        ),
        (kube.NotFoundError(status=404, reason="NotFound", message="gone"), "ProbeFailed"),
    ],
)
def test_probe_failure_reasons(exc, reason):
    state = probe_failure(exc)
    assert (state.status, state.reason) == ("False", reason)


def test_probe_failure_never_repeats_an_unauthorized_message():
    exc = kube.UnauthorizedError(status=401, reason="Unauthorized", message="token eyJhbGci.x.y")
    assert "eyJ" not in probe_failure(exc).message


def test_a_401_names_whose_credential_is_refused():
    exc = kube.UnauthorizedError(status=401, reason="Unauthorized", message="token eyJhbGci.x.y")
    assert probe_failure(exc).message == "the registration credential is refused (401)"
    agent = probe_failure(exc, credential="the agent's credential on its member")
    assert agent == ConditionState(
        "False", "Unauthorized", "the agent's credential on its member is refused (401)"
    )


def test_a_healthy_joined_status_seeds_the_next_holder():
    obs = Observation(version="v1.36.3", healthy=HEALTHY, joined=HEALTHY, member_id="uid-1")
    status = build_status(obs, PROVIDER, None, T0)
    seed = seed_observation(status, "uid-1")
    assert seed == Observation(
        version="v1.36.3", healthy=HEALTHY, joined=HEALTHY, member_id="uid-1"
    )
    assert seed.properties is None  # properties are always listed again, never assumed


@pytest.mark.parametrize(
    ("obs", "member_id"),
    [
        (Observation(version="v1", healthy=DOWN, joined=HEALTHY, member_id="u"), "u"),
        (Observation(version="v1", healthy=HEALTHY, joined=DOWN, member_id="u"), "u"),
        (Observation(version=None, healthy=HEALTHY, joined=HEALTHY, member_id="u"), "u"),
        (Observation(version="v1", healthy=HEALTHY, joined=HEALTHY, member_id="u"), None),
    ],
    ids=["unhealthy", "not-joined", "no-version", "no-member-id"],
)
def test_anything_less_than_healthy_and_known_seeds_nothing(obs, member_id):
    assert seed_observation(build_status(obs, PROVIDER, None, T0), member_id) is None
    assert seed_observation(None, "u") is None


def test_a_token_secret_is_adopted_only_for_its_own_grant_and_whole_annotations():
    """A takeover keeps another replica's token only if it was minted for this member and
    role; its rotation is due at the same fraction of its life as one we minted."""
    issued = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    notes = token_annotations(
        issued=issued, expiration=issued + dt.timedelta(hours=1), member_id="uid-1", role="view"
    )
    secret = {"metadata": {"annotations": notes}}
    due = adoption_due(secret, member_id="uid-1", role="view", fraction=0.8)
    assert due == issued + dt.timedelta(minutes=48)
    assert adoption_due(secret, member_id="uid-2", role="view", fraction=0.8) is None
    assert adoption_due(secret, member_id="uid-1", role="admin", fraction=0.8) is None
    assert adoption_due(secret, member_id=None, role="view", fraction=0.8) is None
    assert adoption_due(None, member_id="uid-1", role="view", fraction=0.8) is None
    torn = {"metadata": {"annotations": {**notes, ANNOTATION_TOKEN_EXPIRES: "soon"}}}
    assert adoption_due(torn, member_id="uid-1", role="view", fraction=0.8) is None


def test_properties_not_listed_yet_keep_the_stored_condition_and_write_nothing():
    """A takeover's member, seeded and observed before its ClusterProperty list answers, does
    not flap PropertiesSynced to Unknown (nor write); a list that fails does say so."""
    prop = ObservedProperty("a.example", "1", T0)
    obs = Observation(
        version="v1.36.3", healthy=HEALTHY, joined=HEALTHY, properties=(prop,), member_id="u"
    )
    stored = build_status(obs, PROVIDER, None, T0)
    seeded = seed_observation(stored, "u")
    assert seeded is not None and seeded.properties is None
    again = build_status(seeded, PROVIDER, stored, T1)
    assert status_matches(again, stored)
    assert cond(again, CONDITION_PROPERTIES_SYNCED)["status"] == "True"
    failed = dataclasses.replace(seeded, properties_error="cannot list ClusterProperty: 403")
    told = build_status(failed, PROVIDER, stored, T1)
    assert cond(told, CONDITION_PROPERTIES_SYNCED)["status"] == "Unknown"
    assert told["properties"] == stored["properties"]  # kept, never dropped


def test_a_trimmed_status_matches_by_its_access_providers_digest():
    # Another replica's profile is cached without its access providers (their CA is most of
    # a profile); a takeover writes its status only if something, those included, changed.
    from cluster_inventory.manager.rules.status import trim_status

    provider = [{"name": "secretreader", "cluster": {"server": "https://m", "x": "CA"}}]
    status = {
        "version": {"kubernetes": "v1.34.0"},
        "accessProviders": provider,
        "conditions": [{"type": "Joined", "status": "True", "reason": "R", "message": "m"}],
    }
    desired = copy.deepcopy(status)
    trimmed = trim_status(copy.deepcopy(status))
    assert "accessProviders" not in trimmed
    assert "CA" not in repr(trimmed)
    assert status_matches(desired, trimmed)
    changed = copy.deepcopy(desired)
    changed["accessProviders"][0]["cluster"]["server"] = "https://elsewhere"
    assert not status_matches(changed, trimmed)
    without = {k: v for k, v in desired.items() if k != "accessProviders"}
    assert not status_matches(without, trimmed)  # the providers must go
