"""The event loop's exception handler: a TLS connection closed mid-write is one debug line."""

from __future__ import annotations

import logging

from cluster_inventory.kube._loop import _exception_handler


class Loop:
    def __init__(self) -> None:
        self.defaults: list[dict] = []

    def default_exception_handler(self, context: dict) -> None:
        self.defaults.append(context)


def test_a_tls_connection_closed_while_writing_is_not_a_traceback(caplog):
    loop = Loop()
    closed = RuntimeError(
        "unable to perform operation on <TCPTransport closed=True>; the handler is closed"
    )
    with caplog.at_level(logging.DEBUG, logger="cluster_inventory.kube"):
        _exception_handler(loop, {"message": "Fatal error on SSL protocol", "exception": closed})  # type: ignore[arg-type]
    assert loop.defaults == []
    assert "TLS connection closed while writing" in caplog.text


def test_anything_else_goes_to_the_default_handler():
    loop = Loop()
    other = {"message": "Task exception was never retrieved", "exception": ValueError("x")}
    _exception_handler(loop, other)  # type: ignore[arg-type]
    ssl_other = {"message": "Fatal error on SSL protocol", "exception": OSError("reset")}
    _exception_handler(loop, ssl_other)  # type: ignore[arg-type]
    assert loop.defaults == [other, ssl_other]


def test_a_handshake_given_up_on_then_reset_is_not_a_traceback(caplog):
    """uvloop issue 437: the handshake waiter of a connect its timeout cancelled."""
    loop = Loop()
    waiter = {
        "message": "Future exception was never retrieved",
        "exception": ConnectionResetError(),
        "future": object(),  # uvloop's plain Future, not a Task
    }
    with caplog.at_level(logging.DEBUG, logger="cluster_inventory.kube"):
        _exception_handler(loop, waiter)  # type: ignore[arg-type]
    assert loop.defaults == []
    assert "TLS handshake given up on, then reset" in caplog.text


async def test_a_task_or_another_error_never_retrieved_still_goes_to_the_default_handler():
    import asyncio

    loop = Loop()

    async def fail() -> None:
        raise ConnectionResetError

    task = asyncio.ensure_future(fail())
    await asyncio.gather(task, return_exceptions=True)
    ours = {
        "message": "Future exception was never retrieved",
        "exception": ConnectionResetError(),
        "future": task,
    }
    other = {
        "message": "Future exception was never retrieved",
        "exception": ValueError("x"),
        "future": object(),
    }
    _exception_handler(loop, ours)  # type: ignore[arg-type]
    _exception_handler(loop, other)  # type: ignore[arg-type]
    assert loop.defaults == [ours, other]
