"""The tunnel's framing (docs/cluster-proxy.md, "The wire"): what a peer may and may not send."""

from __future__ import annotations

import pytest

from cluster_inventory.proxy import wire
from cluster_inventory.proxy.wire import Kind, WireError


def test_a_frame_round_trips_with_its_payload() -> None:
    message = wire.encode(Kind.DATA, 7, b"\x00\x01abc")
    frame = wire.decode(message)
    assert (frame.kind, frame.stream, bytes(frame.payload)) == (Kind.DATA, 7, b"\x00\x01abc")
    assert len(message) == wire.HEADER + 5


def test_credit_carries_its_amount() -> None:
    frame = wire.decode(wire.credit(3, 262144))
    assert frame.kind is Kind.CREDIT
    assert wire.granted(frame) == 262144


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (b"\x04\x00\x00", "shorter than a header"),
        (b"\x09\x00\x00\x00\x01", "unknown frame kind 9"),
        (b"\x04\x00\x00\x00\x00", "stream id 0"),
        (b"\x07\x00\x00\x00\x01\x00\x00", "CREDIT payload of 2 bytes"),
        (b"\x01\x00\x00\x00\x01x", "OPEN frame with a payload"),
        (b"\x03\x00\x00\x00\x01" + b"r" * (wire.MAX_REASON + 1), "REFUSED reason"),
        (b"\x04\x00\x00\x00\x01" + b"d" * (wire.MAX_PAYLOAD + 1), "over"),
    ],
)
def test_a_malformed_message_is_refused_naming_why_without_its_bytes(
    message: bytes, problem: str
) -> None:
    with pytest.raises(WireError) as refused:
        wire.decode(message)
    assert problem in str(refused.value)
    assert "ddd" not in str(refused.value) and "rrr" not in str(refused.value)


def test_encode_refuses_what_decode_would_refuse() -> None:
    with pytest.raises(WireError, match="out of range"):
        wire.encode(Kind.DATA, 0)
    with pytest.raises(WireError, match="over"):
        wire.encode(Kind.DATA, 1, b"x" * (wire.MAX_PAYLOAD + 1))
