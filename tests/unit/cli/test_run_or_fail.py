"""run_or_fail: a command's async part, with an API error as the CLI's one error line."""

from __future__ import annotations

import pytest

from cluster_inventory import kube
from cluster_inventory.cli._errors import run_or_fail


async def _answer() -> int:
    return 42


async def _refused() -> int:
    raise kube.KindNotFoundError("the hub serves no clusterprofiles.multicluster.x-k8s.io")


def test_the_result_comes_back_and_an_api_error_is_one_line_and_exit_code_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_or_fail(_answer()) == 42
    with pytest.raises(SystemExit) as exited:
        run_or_fail(_refused())
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        "error: the hub serves no clusterprofiles.multicluster.x-k8s.io\n"
    )


def test_an_error_that_is_not_the_api_s_is_not_turned_into_a_line() -> None:
    async def broken() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run_or_fail(broken())
