"""The framing over an agent's tunnel (``docs/cluster-proxy.md``, "The wire"). Pure.

A tunnel is one WebSocket (RFC 6455, aiohttp's) between the cluster proxy and one member's
agent; every binary message on it is one frame of one stream:

    +--------+----------------------+------------------------------+
    | kind   | stream id            | payload                      |
    | 1 byte | 4 bytes, big-endian  | 0 .. MAX_PAYLOAD bytes       |
    +--------+----------------------+------------------------------+

A stream is one consumer's TCP connection to the member's API server. Only the proxy opens
streams (``OPEN``); the agent answers ``OPENED`` once it holds a connection to its API server,
or ``REFUSED`` with a reason. Bytes go as ``DATA`` in both directions, each side sending at
most the credit the other gave it (``WINDOW`` initially, topped up by ``CREDIT`` frames as the
receiver writes the bytes out), so one slow consumer never stalls the others on the same
tunnel (HTTP/2's flow control, per stream only). ``END`` is a half close (EOF from its
sender), ``RESET`` ends the stream at once in both directions.

The payload is never inspected or logged: it is the consumer's TLS, end to end to the member.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

__all__ = [
    "HEADER",
    "MAX_MESSAGE",
    "MAX_PAYLOAD",
    "MAX_REASON",
    "SUBPROTOCOL",
    "WINDOW",
    "WS_MAX_MSG_SIZE",
    "Frame",
    "Kind",
    "WireError",
    "credit",
    "decode",
    "encode",
    "granted",
]

#: The WebSocket subprotocol both ends ask for (``Sec-WebSocket-Protocol``).
SUBPROTOCOL = "cluster-inventory.dev.tunnel.v1"
#: Header size: kind and stream id.
HEADER = 5
#: Largest payload of one frame (bytes): a DATA frame carries at most this much.
MAX_PAYLOAD = 64 * 1024
#: Largest message of the protocol; aiohttp's ``max_msg_size`` refuses a message of its
#: own size, so the WebSocket limit is one more.
MAX_MESSAGE = HEADER + MAX_PAYLOAD
WS_MAX_MSG_SIZE = MAX_MESSAGE + 1
#: Credit each side starts a stream with, per direction (bytes).
WINDOW = 2 * 1024 * 1024
#: Longest ``REFUSED`` reason (bytes of UTF-8).
MAX_REASON = 256

_HEADER = struct.Struct(">BI")
_CREDIT = struct.Struct(">I")


class Kind(enum.IntEnum):
    """What a frame does to its stream."""

    OPEN = 1  #: proxy -> agent: a consumer wants the member's API server on this stream id
    OPENED = 2  #: agent -> proxy: connected; bytes may flow
    REFUSED = 3  #: agent -> proxy: not connected; payload is the reason (UTF-8)
    DATA = 4  #: either way: bytes of the stream
    END = 5  #: either way: the sender will send no more bytes (half close)
    RESET = 6  #: either way: the stream is gone
    CREDIT = 7  #: either way: payload is 4 bytes, more bytes the sender may now send


class WireError(ValueError):
    """A message is not a frame of this protocol (the tunnel is closed for it).

    Attributes:
        problem: What is wrong, without the message's bytes.
    """

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"tunnel frame: {problem}")


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame.

    Attributes:
        kind: What it does.
        stream: The stream id (1 .. 2**32 - 1; 0 is never used).
        payload: Its bytes (a view into the message, not a copy).
    """

    kind: Kind
    stream: int
    payload: memoryview | bytes = b""


def encode(kind: Kind, stream: int, payload: bytes | memoryview = b"") -> bytes:
    """One frame as a WebSocket binary message.

    Raises:
        WireError: The stream id is out of range or the payload too large.
    """
    if not 0 < stream < 2**32:
        raise WireError(f"stream id {stream} is out of range")
    if len(payload) > MAX_PAYLOAD:
        raise WireError(f"payload of {len(payload)} bytes is over {MAX_PAYLOAD}")
    return _HEADER.pack(kind, stream) + payload


def credit(stream: int, amount: int) -> bytes:
    """A ``CREDIT`` frame granting ``amount`` more bytes on ``stream``."""
    return encode(Kind.CREDIT, stream, _CREDIT.pack(amount))


def decode(message: bytes) -> Frame:
    """The frame a binary message holds.

    Raises:
        WireError: It is shorter than a header, of an unknown kind, for stream 0, too
            long, or a ``CREDIT``/``REFUSED`` payload of the wrong shape.
    """
    if len(message) < HEADER:
        raise WireError(f"{len(message)} bytes is shorter than a header")
    if len(message) > HEADER + MAX_PAYLOAD:
        raise WireError(f"{len(message) - HEADER} payload bytes is over {MAX_PAYLOAD}")
    raw_kind, stream = _HEADER.unpack_from(message)
    try:
        kind = Kind(raw_kind)
    except ValueError:
        raise WireError(f"unknown frame kind {raw_kind}") from None
    if stream == 0:
        raise WireError("stream id 0")
    payload = memoryview(message)[HEADER:]
    if kind is Kind.CREDIT and len(payload) != _CREDIT.size:
        raise WireError(f"a CREDIT payload of {len(payload)} bytes, not 4")
    if kind is Kind.REFUSED and len(payload) > MAX_REASON:
        raise WireError(f"a REFUSED reason of {len(payload)} bytes is over {MAX_REASON}")
    if kind in (Kind.OPEN, Kind.OPENED, Kind.END, Kind.RESET) and len(payload):
        raise WireError(f"a {kind.name} frame with a payload")
    return Frame(kind, stream, payload)


def granted(frame: Frame) -> int:
    """The bytes a ``CREDIT`` frame grants (its payload decoded)."""
    (amount,) = _CREDIT.unpack(frame.payload)
    return int(amount)
