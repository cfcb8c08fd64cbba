"""The consumers' credential of an agent member, as data (docs/agent.md).

What the agent writes to its hub credential Secret, when the token stored there is kept or
minted again, what the manager reads back from it, and what ``manager accept`` grants.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    ConsumerCredential,
    ReportingConfig,
    credential_secret,
    parse_service_account,
    rotation_time,
    stored_rotation,
)
from cluster_inventory.api.agents import AgentNameError, agent_credential_name, new_acceptance_id
from cluster_inventory.api.constants import AGENT_CREDENTIAL_SECRET_TYPE, LABEL_AGENT
from cluster_inventory.manager.admin.agents import Acceptance, agent_objects
from cluster_inventory.manager.members.agent_credentials import read_agent_token

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
TOKEN = kube.ServiceAccountToken(token="header.claims.sig", expiration=T0 + HOUR)


def _stored(**changes: object) -> dict:
    secret = credential_secret("edge-1", "hub-ns", TOKEN, issued=T0, grant="ns/consumer")
    secret.update(changes)
    return secret


def test_the_credential_secret_holds_the_secretreader_keys_and_when_it_was_minted() -> None:
    secret = _stored()
    assert secret["metadata"]["name"] == "cluster-inventory-agent-edge-1-credential"
    assert secret["metadata"]["namespace"] == "hub-ns"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"token": "header.claims.sig", "expirationTimestamp": "2026-01-01T01:00:00Z"}
    notes = secret["metadata"]["annotations"]
    assert notes["cluster-inventory.dev/token-issued"] == "2026-01-01T00:00:00Z"
    assert notes["cluster-inventory.dev/token-grant"] == "ns/consumer"
    assert "header.claims.sig" not in repr(TOKEN)


def test_a_stored_token_is_kept_until_20_to_25_percent_of_its_life_remains() -> None:
    due = stored_rotation(_stored(), grant="ns/consumer", now=T0)
    assert due == rotation_time(T0, T0 + HOUR, b"header.claims.sig")
    assert T0 + 0.75 * HOUR <= due <= T0 + 0.80 * HOUR
    # The same token renews at the same time after a restart; another token may not.
    assert stored_rotation(_stored(), grant="ns/consumer", now=T0 + 0.5 * HOUR) == due


@pytest.mark.parametrize(
    ("secret", "grant", "now"),
    [
        (None, "ns/consumer", T0),  # no Secret
        ({"metadata": {"name": "x"}}, "ns/consumer", T0),  # empty, as accept leaves it
        (_stored(), "ns/other", T0),  # minted for another account
        (_stored(), "ns/consumer", T0 + 2 * HOUR),  # expired
        (_stored(data={"token": "not base64!"}), "ns/consumer", T0),
    ],
)
def test_a_missing_expired_or_foreign_token_is_minted_again(
    secret: dict | None, grant: str, now: dt.datetime
) -> None:
    assert stored_rotation(secret, grant=grant, now=now) is None


def test_the_manager_reads_the_token_back_and_nothing_from_an_empty_secret() -> None:
    read = read_agent_token(_stored())
    assert read is not None
    assert (read.token, read.expiration, read.issued, read.grant) == (
        "header.claims.sig",
        T0 + HOUR,
        T0,
        "ns/consumer",
    )
    assert "header.claims.sig" not in repr(read)
    assert read_agent_token({"metadata": {}}) is None
    undated = _stored()
    del undated["data"]["expirationTimestamp"]
    assert read_agent_token(undated) is None


def test_accept_precreates_the_credential_secret_and_grants_it_by_name_only() -> None:
    objs = agent_objects(Acceptance("hub-ns", "edge-1", new_acceptance_id()), ["edge"])
    [(resource, secret)] = [
        (r, o) for r, o in objs if o["metadata"]["name"] == agent_credential_name("edge-1")
    ]
    assert resource == kube.SECRETS and secret["metadata"]["namespace"] == "hub-ns"
    assert secret["metadata"]["labels"] == {LABEL_AGENT: "edge-1"}
    assert secret["type"] == AGENT_CREDENTIAL_SECRET_TYPE
    assert "data" not in secret  # accepting again keeps the agent's token
    [role] = [o for r, o in objs if r == kube.ROLES]
    [rule] = [r for r in role["rules"] if r["resources"] == ["secrets"]]
    assert rule == {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["cluster-inventory-agent-edge-1-credential"],
        "verbs": ["get", "update", "patch"],
    }


def test_the_consumer_account_and_lifetime_are_checked() -> None:
    assert parse_service_account("edge-ns/consumer") == ("edge-ns", "consumer")
    for bad in ("consumer", "ns/", "/consumer", "NS/consumer", "ns/a/b"):
        with pytest.raises(AgentNameError, match="--consumer-service-account"):
            parse_service_account(bad)
    with pytest.raises(ValueError, match="consumer_token_lifetime: 60 s is under 600 s"):
        ReportingConfig(name="edge-1", namespace="hub", consumer_token_lifetime=60)
    with pytest.raises(AgentNameError, match="consumer_service_account: name"):
        ReportingConfig(name="edge-1", namespace="hub", consumer_service_account=("ns", "Bad"))


async def test_the_keeper_sleeps_until_the_rotation_and_backs_off_on_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop alone (its ensure() stubbed: what it calls is the integration test's)."""
    now = [T0]
    outcomes: list[object] = [T0 + 0.8 * HOUR] + [kube.KubeError("hub down")] * 8
    outcomes.append(T0 + 2 * HOUR)
    waits: list[float] = []

    class Keeper(ConsumerCredential):
        async def ensure(self) -> dt.datetime:
            outcome = outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            assert isinstance(outcome, dt.datetime)
            return outcome

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += dt.timedelta(seconds=seconds)
        if not outcomes:
            raise asyncio.CancelledError

    keeper = Keeper(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        name="edge-1",
        namespace="hub",
        service_account=("ns", "consumer"),
        now=lambda: now[0],
        sleep=sleep,
    )
    with caplog.at_level(logging.INFO, logger="cluster_inventory.agent"):
        with pytest.raises(asyncio.CancelledError):
            await keeper.run()
    assert waits[0] == 0.8 * 3600  # until the rotation is due: a timer, not a poll
    assert waits[1:9] == [1, 2, 4, 8, 16, 32, 60, 60]  # doubling to 60 s
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "retrying" in warnings[0].getMessage()
    assert any("succeeded again after 8 failed tries" in r.getMessage() for r in caplog.records)
