"""When the hub's refusals prove a rejection (docs/agent.md, "Transient or rejected"). Pure."""

from __future__ import annotations

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import MemberNotAcceptedError, RejectionCheck
from cluster_inventory.agent.rejection import not_accepted


def _refusal() -> MemberNotAcceptedError:
    return MemberNotAcceptedError("edge-1", "hub-ns", "Lease", "forbidden (403)")


def _check(window: float) -> tuple[RejectionCheck, list[float]]:
    clock = [0.0]
    return RejectionCheck(window, clock=lambda: clock[0]), clock


def test_refusals_from_a_ready_hub_prove_nothing_until_they_last_the_window() -> None:
    check, clock = _check(30)
    assert check.judge(_refusal(), not_ready=None) is None  # the first starts the count
    clock[0] = 29.9
    assert check.judge(_refusal(), not_ready=None) is None
    clock[0] = 30.5
    proof = check.judge(_refusal(), not_ready=None)
    assert proof is not None and proof.refused_for == 30.5
    assert str(proof) == (
        "member edge-1 is not accepted on the hub yet (or was rejected): Lease hub-ns/edge-1: "
        "forbidden (403); refused for 30 s while the hub's /readyz answered ok; on the hub, "
        "`cluster-inventory manager accept edge-1` creates it"
    )


def test_a_hub_that_is_not_ready_starts_the_count_again() -> None:
    # A restarting hub answers 403 to everyone while its authorizer has not synced, and
    # 403 or 500 on /readyz meanwhile: no evidence, however long it lasts.
    check, clock = _check(10)
    check.judge(_refusal(), not_ready=None)
    clock[0] = 5
    assert check.judge(_refusal(), not_ready="/readyz answered 403") is None
    clock[0] = 100
    assert check.judge(_refusal(), not_ready="/readyz answered 500") is None
    assert check.judge(_refusal(), not_ready=None) is None  # counting from 100
    clock[0] = 109
    assert check.judge(_refusal(), not_ready=None) is None
    clock[0] = 110
    assert check.judge(_refusal(), not_ready=None) is not None


@pytest.mark.parametrize("reset", ["succeeded", "interrupted"])
def test_a_success_or_another_failure_in_between_starts_the_count_again(reset: str) -> None:
    check, clock = _check(10)
    check.judge(_refusal(), not_ready=None)
    clock[0] = 9
    getattr(check, reset)()
    clock[0] = 15
    assert check.judge(_refusal(), not_ready=None) is None
    clock[0] = 25
    assert check.judge(_refusal(), not_ready=None) is not None


def test_a_zero_window_takes_the_first_refusal_of_a_ready_hub() -> None:
    check, _ = _check(0)
    assert check.judge(_refusal(), not_ready="/readyz answered 500") is None
    assert check.judge(_refusal(), not_ready=None) is not None


async def test_401_5xx_and_unreachable_are_transient_and_reset_the_count() -> None:
    check, clock = _check(10)
    check.judge(_refusal(), not_ready=None)
    for error in (
        kube.UnauthorizedError(status=401, reason="Unauthorized", message="x"),
        kube.ServerUnavailableError(status=503, reason="ServiceUnavailable", message="x"),
        kube.RequestTimeoutError(status=0, reason="Unreachable", message="x"),
    ):
        note = await check.failure(None, error)  # type: ignore[arg-type] - never asked
        assert "transient" in note
    clock[0] = 50
    assert check.judge(_refusal(), not_ready=None) is None


def test_only_403_and_404_are_refusals_of_the_agents_objects() -> None:
    for status, cls in ((403, kube.ForbiddenError), (404, kube.NotFoundError)):
        refused = not_accepted(
            cls(status=status, reason="x", message="no"), "edge-1", "ns", "MemberReport"
        )
        assert refused is not None and refused.refused_for is None
        assert f"(no ({status})" not in str(refused) and f"no ({status})" in str(refused)
    for status, cls in ((401, kube.UnauthorizedError), (500, kube.ServerUnavailableError)):
        assert not_accepted(cls(status=status, reason="x", message="no"), "e", "ns", "L") is None


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(ValueError, match="rejection window"):
        RejectionCheck(-1)
