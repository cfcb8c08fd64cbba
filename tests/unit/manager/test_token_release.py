"""First tokens wait until no member is starting and the status queue is empty (or 30 s)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from cluster_inventory.manager.controllers import token_controller as tokens
from cluster_inventory.manager.controllers.token_controller import TokenController


class _Queue(list[Any]):
    def add(self, key: Any) -> None:
        self.append(key)


def _controller(statuses_queued: int) -> tuple[TokenController, Any]:
    manager = SimpleNamespace(
        statuses=SimpleNamespace(queue=_Queue(range(statuses_queued))),
        token_queue=_Queue(),
        members=SimpleNamespace(starting=False),
    )
    return TokenController(manager, SimpleNamespace()), manager  # type: ignore[arg-type]


async def test_parked_tokens_are_queued_at_once_when_no_status_is_queued() -> None:
    controller, manager = _controller(0)
    controller._parked = {"a", "b"}  # type: ignore[assignment]
    controller.release()
    assert sorted(manager.token_queue) == ["a", "b"]
    assert not controller._parked


async def test_parked_tokens_wait_for_the_status_queue_then_go(monkeypatch: Any) -> None:
    monkeypatch.setattr(tokens, "_RECHECK", 0.01)
    controller, manager = _controller(2)
    controller._parked = {"a"}  # type: ignore[assignment]
    controller.release()
    controller.release()  # one re-check pending, not two
    assert manager.token_queue == [] and controller._recheck is not None
    manager.statuses.queue.clear()
    await asyncio.sleep(0.05)
    assert manager.token_queue == ["a"]
    assert controller._recheck is None


async def test_parked_tokens_go_after_the_longest_wait_even_with_statuses_queued() -> None:
    controller, manager = _controller(5)
    controller._parked = {"a"}  # type: ignore[assignment]
    controller._waiting_since = time.monotonic() - tokens.STATUS_FIRST_WAIT - 1
    controller.release()
    assert manager.token_queue == ["a"]


async def test_close_cancels_the_recheck() -> None:
    controller, manager = _controller(1)
    controller._parked = {"a"}  # type: ignore[assignment]
    controller.release()
    controller.close()
    assert controller._recheck is None
    manager.statuses.queue.clear()
    await asyncio.sleep(1.2)
    assert manager.token_queue == []
