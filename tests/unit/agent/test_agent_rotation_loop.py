"""keep_identity_fresh: sleeps until the renewal time, rotates, retries a failure (no I/O)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    AgentIdentity,
    IdentityStore,
    JoinError,
    new_private_key,
    renewal_time,
)
from cluster_inventory.agent import join as join_module
from cluster_inventory.api.agents import agent_user
from tests.support.data.certificates import T0, bootstrap_connection, certificate


def _identity(start: dt.datetime) -> AgentIdentity:
    key = new_private_key()
    return AgentIdentity(
        name="m", key_pem=key, cert_pem=certificate(key, agent_user("m"), start, 10)
    )


async def test_it_rotates_at_the_renewal_time_and_retries_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [T0]
    store = IdentityStore(tmp_path, now=lambda: now[0])
    first, second = _identity(T0), _identity(T0 + dt.timedelta(hours=8))
    answers: list[AgentIdentity | Exception] = [
        first,
        JoinError("CertificateSigningRequest x", "status.conditions[Denied]", "no"),
        second,
    ]

    async def fake_ensure(*_: object, **__: object) -> AgentIdentity:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += dt.timedelta(seconds=seconds)
        if not answers:
            raise asyncio.CancelledError

    monkeypatch.setattr(join_module, "ensure_identity", fake_ensure)
    rotated: list[AgentIdentity] = []
    with pytest.raises(asyncio.CancelledError):
        await join_module.keep_identity_fresh(
            bootstrap_connection(), "m", store, rotated.append, sleep=fake_sleep
        )
    assert rotated == [first, second]
    assert waits[0] == (renewal_time(first.cert_pem) - T0).total_seconds()
    left = (first.not_after - (T0 + dt.timedelta(seconds=waits[0]))).total_seconds()
    assert waits[1] == max(left / 10, 10.0)


async def test_without_an_identity_a_failed_first_join_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refused(*_: object, **__: object) -> AgentIdentity:
        raise kube.ForbiddenError(status=403, reason="Forbidden", message="no", target="x")

    monkeypatch.setattr(join_module, "ensure_identity", refused)
    with pytest.raises(kube.ForbiddenError):
        await join_module.keep_identity_fresh(
            bootstrap_connection(), "m", IdentityStore(tmp_path), print
        )
