"""The one member probe: its request sequence, its cadence, its reading of failures."""

from __future__ import annotations

import pytest

from cluster_inventory import kube
from cluster_inventory.kube.member_probe import (
    FIRST_REPROBE,
    VERSION_EVERY,
    ProbeCadence,
    probe_member,
)

CLIENT = object()


def test_an_unhealthy_member_is_probed_again_sooner_doubling_up_to_the_interval() -> None:
    cadence = ProbeCadence()
    waits = [cadence.next_wait(30.0, soon=True) for _ in range(7)]
    assert waits == [FIRST_REPROBE, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert cadence.next_wait(30.0, soon=False) == 30.0
    assert cadence.next_wait(30.0, soon=True) == FIRST_REPROBE  # the doubling starts over


def test_the_version_is_read_on_reconnect_and_every_version_every_probes() -> None:
    cadence = ProbeCadence()
    assert cadence.reads_version(reconnect=True)
    reads = [cadence.reads_version(reconnect=False) for _ in range(VERSION_EVERY)]
    assert reads == [False] * (VERSION_EVERY - 1) + [True]
    assert not cadence.version_due_next


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    async def get_text(client: object, path: str, **kwargs: object) -> tuple[int, str]:
        asked.append(path)
        return 200, "readyz check passed"

    async def request(client: object, method: str, path: str, **kwargs: object) -> dict[str, str]:
        asked.append(path)
        raise kube.ServerUnavailableError(status=503, reason="Unavailable", message="draining")

    async def get(client: object, resource: object, name: str, **kwargs: object) -> dict:
        asked.append(f"namespaces/{name}")
        return {"metadata": {"uid": "uid-1"}}

    monkeypatch.setattr(kube, "get_text", get_text)
    monkeypatch.setattr(kube, "request", request)
    monkeypatch.setattr(kube, "get", get)
    return asked


async def test_a_reconnect_asks_readyz_version_and_kube_system_and_keeps_each_failure(
    answers: list[str],
) -> None:
    reading = await probe_member(
        CLIENT,  # type: ignore[arg-type]
        timeout=1.0,
        reconnect=True,
        cadence=ProbeCadence(),
    )
    assert answers == ["/readyz?verbose", "/version", "namespaces/kube-system"]
    assert reading.health.status == "True"
    assert reading.version_read and reading.version is None
    assert isinstance(reading.version_error, kube.ServerUnavailableError)
    assert reading.identity_read and reading.member_id == "uid-1"


async def test_a_refused_readyz_names_the_callers_credential_and_asks_nothing_more(
    monkeypatch: pytest.MonkeyPatch, answers: list[str]
) -> None:
    async def refused(client: object, path: str, **kwargs: object) -> tuple[int, str]:
        answers.append(path)
        raise kube.UnauthorizedError(status=401, reason="Unauthorized", message="token=s3cret")

    monkeypatch.setattr(kube, "get_text", refused)
    reading = await probe_member(
        CLIENT,  # type: ignore[arg-type]
        timeout=1.0,
        reconnect=True,
        cadence=ProbeCadence(),
        credential="the agent's credential on its member",
    )
    assert answers == ["/readyz?verbose"]
    assert reading.health.reason == "Unauthorized"
    assert reading.health.message == "the agent's credential on its member is refused (401)"
    assert "s3cret" not in reading.health.message
    assert not reading.version_read and not reading.identity_read
