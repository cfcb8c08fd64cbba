"""``kube.run``: our long-running processes run on uvloop unless told otherwise."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from cluster_inventory import kube


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_uvloop_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(kube.EVENT_LOOP_ENV, raising=False)
    assert kube.run(_loop_type()) is uvloop.Loop


def test_the_environment_can_ask_for_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kube.EVENT_LOOP_ENV, "asyncio")
    loop_type = kube.run(_loop_type())
    assert loop_type is not uvloop.Loop
    assert issubclass(loop_type, asyncio.BaseEventLoop)


def test_an_argument_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kube.EVENT_LOOP_ENV, "asyncio")
    assert kube.run(_loop_type(), event_loop="uvloop") is uvloop.Loop


def test_an_unknown_loop_is_refused_and_the_coroutine_is_not_left_unawaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(kube.EVENT_LOOP_ENV, "trio")
    coro = _loop_type()
    with pytest.raises(ValueError, match="CLUSTER_INVENTORY_EVENT_LOOP='trio'"):
        kube.run(coro)
    assert coro.cr_frame is None  # closed: no 'never awaited' warning later


def test_exceptions_and_results_pass_through() -> None:
    async def fails() -> None:
        raise LookupError("from main")

    with pytest.raises(LookupError, match="from main"):
        kube.run(fails())
