"""Which changes of a profile's conditions become Events, and what the Event says."""

import datetime as dt

from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    CONDITION_PROPERTIES_SYNCED,
)
from cluster_inventory.kube import ClusterConnection
from cluster_inventory.manager.rules.status import (
    ConditionState,
    Observation,
    ObservedProperty,
    access_provider,
    build_status,
)
from cluster_inventory.manager.rules.transitions import condition_transitions

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=5)
PROVIDER = access_provider("secretreader", ClusterConnection(server="https://m"), "c1")
HEALTHY = ConditionState("True", "APIServerReady", "readyz: all checks passed")
DOWN = ConditionState("False", "APIServerUnreachable", "connection refused")
PROPS = (ObservedProperty("a.example", "1", T0),)


def cond_status(status, kind):
    return next(c["status"] for c in status["conditions"] if c["type"] == kind)


def status_of(obs, previous=None, when=T0):
    return build_status(obs, PROVIDER, previous, when)


def test_a_healthy_member_going_down_and_back_is_a_warning_then_a_normal_event():
    up = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    down = status_of(Observation(healthy=DOWN, joined=HEALTHY, properties=PROPS), up, T1)

    [went] = condition_transitions(up, down)
    assert (went.condition, went.previous, went.status) == (
        CONDITION_CONTROL_PLANE_HEALTHY,
        "True",
        "False",
    )
    assert (went.event_type, went.event_reason) == ("Warning", "ControlPlaneUnhealthy")
    assert went.note("member2") == (
        "member member2: ControlPlaneHealthy True -> False (APIServerUnreachable): "
        "connection refused"
    )

    [back] = condition_transitions(
        down, status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS), down, T1)
    )
    assert (back.event_type, back.event_reason) == ("Normal", "ControlPlaneHealthy")
    assert back.note("member2").startswith("member member2: ControlPlaneHealthy False -> True")


def test_an_unchanged_status_is_no_news():
    obs = Observation(healthy=DOWN, joined=HEALTHY, properties=PROPS)
    first = status_of(obs)
    assert condition_transitions(first, status_of(obs, first, T1)) == []


def test_a_new_reason_while_down_is_news_but_not_while_up():
    down = status_of(Observation(healthy=DOWN, joined=HEALTHY, properties=PROPS))
    other = ConditionState("False", "APIServerUnavailable", "503")
    [change] = condition_transitions(
        down, status_of(Observation(healthy=other, joined=HEALTHY, properties=PROPS), down, T1)
    )
    assert (change.previous, change.status, change.reason) == (
        "False",
        "False",
        "APIServerUnavailable",
    )
    assert change.note("c1") == (
        "member c1: ControlPlaneHealthy False (APIServerUnreachable -> APIServerUnavailable): 503"
    )

    up = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    reworded = ConditionState("True", "SomeOtherReady", "fine")
    assert (
        condition_transitions(
            up, status_of(Observation(healthy=reworded, joined=HEALTHY, properties=PROPS), up, T1)
        )
        == []
    )


def test_a_first_status_reports_only_what_is_wrong():
    healthy = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    assert condition_transitions(None, healthy) == []
    # Properties not listed yet are Unknown: not known is no news.
    unlisted = status_of(Observation(healthy=HEALTHY, joined=HEALTHY))
    assert cond_status(unlisted, CONDITION_PROPERTIES_SYNCED) == "Unknown"
    assert condition_transitions(None, unlisted) == []
    refused = ConditionState(
        "False", "Unauthorized", "the registration credential is refused (401)"
    )
    born_broken = status_of(Observation(healthy=refused, joined=refused, properties=PROPS))
    found = condition_transitions({}, born_broken)
    assert [(t.condition, t.event_reason, t.previous) for t in found] == [
        (CONDITION_CONTROL_PLANE_HEALTHY, "ControlPlaneUnhealthy", ""),
        (CONDITION_JOINED, "NotJoined", ""),
    ]
    assert found[1].note("c9") == (
        "member c9: Joined False (Unauthorized): the registration credential is refused (401)"
    )


def test_an_agent_member_going_stale_and_properties_not_mirrored_are_their_own_reasons():
    up = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    stale = ConditionState("Unknown", "AgentHeartbeatStale", "no heartbeat for 120s")
    too_long = (ObservedProperty("b.example", "x" * 2000, T1),)
    after = status_of(Observation(healthy=stale, joined=HEALTHY, properties=too_long), up, T1)
    found = {t.condition: t for t in condition_transitions(up, after)}
    assert found[CONDITION_CONTROL_PLANE_HEALTHY].event_reason == "AgentHeartbeatStale"
    assert found[CONDITION_CONTROL_PLANE_HEALTHY].event_type == "Warning"
    props = found[CONDITION_PROPERTIES_SYNCED]
    assert (props.event_reason, props.status) == ("PropertiesNotMirrored", "False")
    assert "b.example" in props.note("c1")


def test_a_long_message_is_cut_so_the_note_stays_within_the_event_limit():
    up = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    long = ConditionState("False", "ReadyzFailed", "[-]etcd failed " * 200)
    [change] = condition_transitions(
        up, status_of(Observation(healthy=long, joined=HEALTHY, properties=PROPS), up, T1)
    )
    note = change.note("c1")
    assert len(note) < 1024
    assert note.endswith("...")


def test_a_malformed_stored_status_is_read_as_none():
    down = status_of(Observation(healthy=DOWN, joined=HEALTHY, properties=PROPS))
    assert [t.condition for t in condition_transitions({"conditions": "nonsense"}, down)] == [
        CONDITION_CONTROL_PLANE_HEALTHY
    ]


def test_a_hostile_agent_chooses_no_event_reason_and_no_terminal_control_in_the_note():
    # An agent member's health reason and message are its agent's text (up to 4,096
    # characters of it): markup, escape sequences, newlines, a forged second line.
    up = status_of(Observation(healthy=HEALTHY, joined=HEALTHY, properties=PROPS))
    hostile = ConditionState(
        "False",
        "Pwned\x1b]0;title\x07",
        "\x1b[2J\x1b[31mall good\r\nWarning FakeEvent: member other: hub compromised" * 60,
    )
    after = status_of(Observation(healthy=hostile, joined=HEALTHY, properties=PROPS), up, T1)
    [change] = condition_transitions(up, after)
    assert change.event_reason == "ControlPlaneUnhealthy"  # ours, never the agent's
    note = change.note("c1")
    assert note.startswith("member c1: ControlPlaneHealthy True -> False (Pwned ]0;title ): ")
    assert all(ch.isprintable() for ch in note)
    assert len(note.encode()) < 1024
