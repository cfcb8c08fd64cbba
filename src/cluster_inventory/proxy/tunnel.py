"""One agent's tunnel: many streams multiplexed over one WebSocket (``docs/cluster-proxy.md``).

The same class runs at both ends. At the cluster proxy, :meth:`Tunnel.open` asks the agent
for a stream and :meth:`Tunnel.carry` then carries a consumer's socket over it; at the agent,
``on_open`` is called for each stream the proxy opens and carries it to the member's API
server. A stream is a pair of asyncio streams (the local socket) and an id on the wire
(:mod:`.wire`).

Where the time goes, and why it is spent so: bytes read from a socket go out as one frame at
once, from the task that read them (no queue, no extra task hop), and bytes received are
written to the socket from the tunnel's one reader task; a ``CREDIT`` frame goes back only
once a quarter of the window was written out, so a small request and its answer cost two
frames and no credit. Every socket is TCP_NODELAY (asyncio and aiohttp set it), and the
WebSocket is not compressed (the payload is TLS: it does not compress).

Nothing of a payload is ever logged: a log line names the tunnel, the stream id and a
count of bytes at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import aiohttp

from cluster_inventory import kube
from cluster_inventory.proxy import wire
from cluster_inventory.proxy.wire import Kind

__all__ = ["StreamRefused", "Tunnel", "WebSocket"]

_log = logging.getLogger("cluster_inventory.proxy")

#: Seconds the proxy waits for the agent's OPENED or REFUSED.
OPEN_TIMEOUT = 10.0
#: Written-out bytes that make a CREDIT frame (a quarter of the window).
_CREDIT_BATCH = wire.WINDOW // 4
#: A socket's write buffer past this many bytes holds credit back until it drains.
_BUFFERED = 64 * 1024


class WebSocket(Protocol):
    """What a tunnel needs of a WebSocket (aiohttp's client and server ones both are)."""

    async def send_bytes(self, data: bytes) -> None:
        """Send one binary message."""

    async def receive(self) -> aiohttp.WSMessage:
        """The next message (CLOSE, CLOSED or ERROR once the connection ends)."""

    async def close(self, *, code: int = ..., message: bytes = ...) -> bool:
        """Close the connection."""


class StreamRefused(Exception):
    """The agent did not open a stream (its API server is unreachable, or it timed out).

    Attributes:
        reason: What the agent said, or why no answer came.
        tunnel_ended: The tunnel itself ended or failed before the agent answered: the
            agent refused nothing, so another tunnel of the member's may serve.
        timed_out: The agent did not answer within the time it was given.
    """

    def __init__(self, reason: str, *, tunnel_ended: bool = False, timed_out: bool = False) -> None:
        self.reason = reason
        self.tunnel_ended = tunnel_ended
        self.timed_out = timed_out
        super().__init__(reason)


class _Stream:
    """One stream's state: the credit both ways and its local socket."""

    __slots__ = (
        "drain",
        "ended_in",
        "ended_out",
        "gone",
        "id",
        "opened",
        "owed",
        "preface",
        "room",
        "send_credit",
        "window",
        "writer",
    )

    def __init__(self, stream_id: int) -> None:
        self.id = stream_id
        self.send_credit = wire.WINDOW
        self.window = wire.WINDOW  # what the peer may still send us
        self.owed = 0  # bytes written out, not yet credited back
        self.room = asyncio.Event()
        self.room.set()
        self.gone = asyncio.Event()
        self.writer: asyncio.StreamWriter | None = None
        self.opened: asyncio.Future[None] | None = None
        self.preface = b""
        self.ended_in = self.ended_out = False
        self.drain: asyncio.Task[None] | None = None


class Tunnel:
    """A multiplexed tunnel over one WebSocket.

    Args:
        ws: The connected WebSocket.
        label: Who is at the other end, for logs (``agent of member edge-1``).
        on_open: At the agent: called with each stream id the proxy opens (it must answer
            with :meth:`accept` or :meth:`refuse`); None at the proxy, which refuses a peer
            that opens streams.
    """

    def __init__(
        self,
        ws: WebSocket,
        *,
        label: str,
        on_open: Callable[[int], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self.ws = ws
        self.label = label
        self._on_open = on_open
        self._streams: dict[int, _Stream] = {}
        self._next_id = 1
        self._tasks = kube.TaskSet(label, logger=_log)
        self.closed = asyncio.Event()
        #: Why the tunnel ended (None while it runs).
        self.close_reason: str | None = None

    @property
    def streams(self) -> int:
        """Streams open now."""
        return len(self._streams)

    async def run(self) -> None:
        """Read frames until the WebSocket closes or the peer breaks the protocol.

        Every stream is reset when it ends; :attr:`close_reason` says why.
        """
        try:
            while True:
                msg = await self.ws.receive()
                if msg.type is aiohttp.WSMsgType.BINARY:
                    try:
                        frame = wire.decode(msg.data)
                    except wire.WireError as exc:
                        await self._end(exc.problem)
                        return
                    problem = self._dispatch(frame)
                    if problem is not None:
                        await self._end(problem)
                        return
                elif msg.type in (
                    aiohttp.WSMsgType.CLOSE,
                    aiohttp.WSMsgType.CLOSING,
                    aiohttp.WSMsgType.CLOSED,
                ):
                    await self._end("closed by the peer")
                    return
                elif msg.type is aiohttp.WSMsgType.ERROR:
                    await self._end(f"connection failed: {type(msg.data).__name__}: {msg.data}")
                    return
                else:  # TEXT: not this protocol
                    await self._end("a text message")
                    return
        finally:
            if self.close_reason is None:
                await self._end("stopped")

    async def close(self, reason: str) -> None:
        """End the tunnel and every stream on it (idempotent)."""
        await self._end(reason)

    async def _end(self, reason: str) -> None:
        if self.close_reason is not None:
            return
        self.close_reason = reason
        _log.info("%s ended: %s", self.label, reason)
        for stream in list(self._streams.values()):
            self._drop(stream)
        with contextlib.suppress(Exception):
            await self.ws.close(code=aiohttp.WSCloseCode.GOING_AWAY, message=reason[:120].encode())
        await self._tasks.stop()
        self.closed.set()

    # -- frames in ------------------------------------------------------------------------

    def _dispatch(self, frame: wire.Frame) -> str | None:
        """Apply one frame; a problem that ends the tunnel, or None."""
        kind = frame.kind
        if kind is Kind.OPEN:
            if self._on_open is None:
                return "the agent opened a stream (only the proxy opens streams)"
            if frame.stream in self._streams:
                return f"stream {frame.stream} opened twice"
            self._streams[frame.stream] = _Stream(frame.stream)
            self._tasks.spawn(self._on_open(frame.stream), name=f"stream {frame.stream}")
            return None
        stream = self._streams.get(frame.stream)
        if stream is None:
            return None  # a stream that just ended here: its frames in flight are dropped
        if kind is Kind.OPENED or kind is Kind.REFUSED:
            if self._on_open is not None or stream.opened is None or stream.opened.done():
                return f"an unexpected {kind.name} for stream {frame.stream}"
            if kind is Kind.OPENED:
                if stream.preface and stream.writer is not None:
                    stream.writer.write(stream.preface)
                stream.opened.set_result(None)
            else:
                reason = bytes(frame.payload).decode("utf-8", "replace")
                stream.opened.set_exception(StreamRefused(reason))
            return None
        if kind is Kind.DATA:
            return self._data(stream, frame.payload)
        if kind is Kind.CREDIT:
            stream.send_credit += wire.granted(frame)
            if stream.send_credit > wire.WINDOW:
                return f"stream {frame.stream} was given credit past its window"
            stream.room.set()
            return None
        if kind is Kind.END:
            stream.ended_in = True
            if stream.writer is not None and stream.writer.can_write_eof():
                with contextlib.suppress(OSError, RuntimeError):
                    stream.writer.write_eof()
            self._maybe_done(stream)
            return None
        # RESET
        self._drop(stream)
        return None

    def _data(self, stream: _Stream, payload: memoryview | bytes) -> str | None:
        size = len(payload)
        stream.window -= size
        if stream.window < 0:
            return f"stream {stream.id} was sent {-stream.window} bytes past its credit"
        writer = stream.writer
        early = stream.opened is not None and not stream.opened.done()
        if writer is None or early or stream.ended_in:
            return f"data on stream {stream.id} before it opened or after its end"
        try:
            writer.write(payload)
        except (OSError, RuntimeError):
            self._reset(stream)
            return None
        stream.owed += size
        if writer.transport.get_write_buffer_size() <= _BUFFERED:
            if stream.owed >= _CREDIT_BATCH:
                self._grant(stream)
        elif stream.drain is None:
            stream.drain = self._tasks.spawn(self._drained(stream), name=f"drain {stream.id}")
        return None

    async def _drained(self, stream: _Stream) -> None:
        """Credit what was written once the socket's buffer drained."""
        try:
            assert stream.writer is not None
            with contextlib.suppress(OSError, ConnectionError, RuntimeError):
                await stream.writer.drain()
            if stream.id in self._streams:
                self._grant(stream)
        finally:
            stream.drain = None

    def _grant(self, stream: _Stream) -> None:
        owed, stream.owed = stream.owed, 0
        if owed:
            stream.window += owed
            self._send_soon(wire.credit(stream.id, owed))

    def _send_soon(self, message: bytes) -> None:
        """Send from a frame handler (not awaited: a non-compressed send writes at once)."""
        self._tasks.spawn(self._send_quietly(message), name="send")

    async def _send_quietly(self, message: bytes) -> None:
        with contextlib.suppress(Exception):
            await self.ws.send_bytes(message)

    # -- streams --------------------------------------------------------------------------

    async def open(
        self, writer: asyncio.StreamWriter, *, preface: bytes = b"", timeout: float = OPEN_TIMEOUT
    ) -> int:
        """Ask the agent for a stream to its member's API server (at the proxy).

        Args:
            writer: The consumer's socket: the stream's bytes are written to it from the
                moment the agent says OPENED.
            preface: Written to ``writer`` first, when the agent says OPENED (the CONNECT
                answer), so it always comes before the member's first byte.
            timeout: Seconds the agent has to answer.

        Returns:
            The stream id, for :meth:`carry`.

        Raises:
            StreamRefused: The agent refused, did not answer within ``timeout`` s, or the
                tunnel ended.
        """
        if self.close_reason is not None:
            raise StreamRefused(f"the tunnel ended: {self.close_reason}", tunnel_ended=True)
        stream_id = self._next_id
        self._next_id += 1
        stream = _Stream(stream_id)
        stream.writer = writer
        stream.preface = preface
        stream.opened = opened = asyncio.get_running_loop().create_future()
        self._streams[stream_id] = stream
        try:
            await self.ws.send_bytes(wire.encode(Kind.OPEN, stream_id))
            async with asyncio.timeout(timeout):
                await asyncio.shield(opened)
        except TimeoutError:
            stream.writer = None  # not ours to close: the caller answers the consumer
            self._reset(stream)
            raise StreamRefused(
                f"the agent did not answer in {timeout:g} s", timed_out=True
            ) from None
        except StreamRefused:
            self._streams.pop(stream_id, None)
            raise
        except (ConnectionError, RuntimeError) as exc:
            self._streams.pop(stream_id, None)
            raise StreamRefused(
                f"the tunnel failed: {type(exc).__name__}", tunnel_ended=True
            ) from None
        return stream_id

    async def accept(
        self, stream_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Tell the proxy stream ``stream_id`` is open, then carry it (at the agent).

        ``writer`` takes the stream's bytes before OPENED goes out, so none is dropped.
        """
        stream = self._streams.get(stream_id)
        if stream is None:  # reset meanwhile
            writer.close()
            return
        stream.writer = writer
        try:
            await self.ws.send_bytes(wire.encode(Kind.OPENED, stream_id))
        except (ConnectionError, RuntimeError):
            self._drop(stream)
            return
        await self.carry(stream_id, reader, writer)

    async def refuse(self, stream_id: int, reason: str) -> None:
        """Tell the proxy stream ``stream_id`` will not open, and why (no payload bytes)."""
        self._streams.pop(stream_id, None)
        text = reason.encode("utf-8", "replace")[: wire.MAX_REASON]
        with contextlib.suppress(Exception):
            await self.ws.send_bytes(wire.encode(Kind.REFUSED, stream_id, text))

    async def carry(
        self, stream_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Carry a local socket over stream ``stream_id`` until both ends are done.

        Reads run in the caller's task; writes happen as frames arrive. Returns when the
        stream ended (both halves closed, or a reset, or the tunnel's end); the socket is
        closed then.
        """
        stream = self._streams.get(stream_id)
        if stream is None:
            writer.close()
            return
        stream.writer = writer
        try:
            while not stream.ended_out:
                while stream.send_credit <= 0:
                    stream.room.clear()
                    await self._until(stream, stream.room)
                    if stream.gone.is_set():
                        return
                try:
                    data = await reader.read(min(wire.MAX_PAYLOAD, stream.send_credit))
                except (OSError, ConnectionError):
                    self._reset(stream)
                    return
                if stream.gone.is_set():
                    return
                if not data:
                    stream.ended_out = True
                    await self.ws.send_bytes(wire.encode(Kind.END, stream_id))
                    break
                stream.send_credit -= len(data)
                await self.ws.send_bytes(wire.encode(Kind.DATA, stream_id, data))
            self._maybe_done(stream)
            await stream.gone.wait()
        except (ConnectionError, RuntimeError):
            self._reset(stream)
        finally:
            if stream.id in self._streams:  # cancelled: the peer must hear of it
                self._reset(stream)
            else:
                self._drop(stream)

    async def _until(self, stream: _Stream, event: asyncio.Event) -> None:
        gone = asyncio.ensure_future(stream.gone.wait())
        waited = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait([gone, waited], return_when=asyncio.FIRST_COMPLETED)
        finally:
            await kube.cancel_and_wait(gone, waited)

    def _maybe_done(self, stream: _Stream) -> None:
        if stream.ended_in and stream.ended_out:
            self._drop(stream)

    def _reset(self, stream: _Stream) -> None:
        """End ``stream`` here and tell the peer."""
        if self._streams.pop(stream.id, None) is not None and self.close_reason is None:
            self._send_soon(wire.encode(Kind.RESET, stream.id))
        self._drop(stream)

    def _drop(self, stream: _Stream) -> None:
        """Forget ``stream`` and close its socket (the peer was told, or told us)."""
        self._streams.pop(stream.id, None)
        opened = stream.opened
        # Before OPENED the caller of open() owns the socket (it answers the consumer).
        owned = opened is None or (
            opened.done() and not opened.cancelled() and opened.exception() is None
        )
        if opened is not None and not opened.done():
            opened.set_exception(
                StreamRefused(f"the tunnel ended: {self.close_reason}", tunnel_ended=True)
            )
        stream.gone.set()
        stream.room.set()
        if owned and stream.writer is not None:
            stream.writer.close()
