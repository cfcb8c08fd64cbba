"""First tokens wait until no member is starting and the status queue is empty (or 30 s).

The token controller is built as the cluster manager builds it, with its hub view (a client
that is never used: nothing here talks to a server), and small fakes of what it asks of the
others: whether members are starting, and the status controller's backlog.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.manager import ManagerConfig, ProfileKey
from cluster_inventory.manager.controllers import token_controller
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.controllers.targets import ProfileTargets
from cluster_inventory.manager.controllers.token_controller import TokenController
from cluster_inventory.manager.members.agent_credentials import AgentCredentials
from cluster_inventory.manager.members.pool import Member
from cluster_inventory.manager.rules.inventory_state import InventoryState
from cluster_inventory.manager.rules.member_keys import MemberKey

A, B = ProfileKey("inv", "a"), ProfileKey("inv", "b")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class _Members:
    """The member pool as the token controller asks it: is anyone starting, who is who."""

    starting: bool = False

    def get(self, key: MemberKey) -> Member | None:
        return None


@dataclass
class _Tokens:
    controller: TokenController
    members: _Members
    statuses: list[Any]

    async def queued(self) -> set[ProfileKey]:
        """The keys the controller queued (taken off its queue)."""
        queue, found = self.controller.controller.queue, set()
        for _ in range(len(queue)):
            key = await queue.get()
            queue.done(key)
            found.add(key)
        return found


@pytest.fixture
async def tokens() -> AsyncIterator[_Tokens]:
    config = ManagerConfig()
    client = await kube.new_client(kube.ClusterConnection(server="https://127.0.0.1:1"))
    try:
        hub = HubView(client, config, now=_now, registry=CollectorRegistry(), identity="t")
        members, statuses = _Members(), list[Any]()
        targets = ProfileTargets(InventoryState(), hub.profiles, members)
        controller = TokenController(
            hub, targets, members, AgentCredentials(client, config), statuses
        )
        yield _Tokens(controller, members, statuses)
        controller.close()
    finally:
        await client.close()


async def test_parked_tokens_are_queued_at_once_when_no_status_is_queued(tokens: _Tokens) -> None:
    tokens.controller._parked = {A, B}
    tokens.controller.release()
    assert await tokens.queued() == {A, B}
    assert not tokens.controller._parked


async def test_parked_tokens_wait_for_the_status_queue_then_go(
    tokens: _Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_controller, "_RECHECK", 0.01)
    tokens.statuses[:] = [A, B]
    tokens.controller._parked = {A}
    tokens.controller.release()
    tokens.controller.release()  # one re-check pending, not two
    assert await tokens.queued() == set() and tokens.controller._recheck is not None
    tokens.statuses.clear()
    await asyncio.sleep(0.05)
    assert await tokens.queued() == {A}
    assert tokens.controller._recheck is None


async def test_parked_tokens_wait_while_a_member_is_still_starting(
    tokens: _Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_controller, "_RECHECK", 0.01)
    tokens.statuses[:] = [A]
    tokens.members.starting = True
    tokens.controller._parked = {B}
    tokens.controller.release()
    tokens.statuses.clear()
    await asyncio.sleep(0.05)
    assert await tokens.queued() == set()  # the re-check found a member starting: the pool's
    tokens.members.starting = False  # "settled" event releases them
    tokens.controller.release()
    assert await tokens.queued() == {B}


async def test_parked_tokens_go_after_the_longest_wait_even_with_statuses_queued(
    tokens: _Tokens,
) -> None:
    tokens.statuses[:] = [A, B, A, B, A]
    tokens.controller._parked = {A}
    tokens.controller._waiting_since = time.monotonic() - token_controller.STATUS_FIRST_WAIT - 1
    tokens.controller.release()
    assert await tokens.queued() == {A}


async def test_close_cancels_the_recheck(tokens: _Tokens) -> None:
    tokens.statuses[:] = [A]
    tokens.controller._parked = {A}
    tokens.controller.release()
    tokens.controller.close()
    assert tokens.controller._recheck is None
    tokens.statuses.clear()
    await asyncio.sleep(1.2)
    assert await tokens.queued() == set()
