"""A member in a network namespace of its own, with forward proxies at its edge (test code only).

:mod:`cluster_inventory.testing.netns` runs the member, its bridges to the hub and its
control socket; this entry module adds, inside, a forward proxy per scheme
(``tests/support/network/proxies.py``, SOCKS5 and HTTP CONNECT) on a Unix socket that the
host publishes on a loopback port: a proxy at the member's edge, as a user would run one for
its consumers (``docs/agent.md``). Each proxy records the ``host:port`` of every tunnel it
opened, so a test can tell a client went through it.

A test fails (never skips) when ``unshare -rn`` is refused: it exists to show the agent works
where nothing routes to the member.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from cluster_inventory.testing import ControlPlane
from cluster_inventory.testing.netns import (
    NetnsMember,
    NetnsRefusedError,
    inside_arguments,
    run_inside,
)
from cluster_inventory.testing.netns import netns_member as _netns_member
from tests.support import REPO
from tests.support.network.proxies import serve_proxy

SCHEMES = ("http", "socks5")


def edge_proxy(ns: NetnsMember, scheme: str) -> str:
    """The URL on the host's loopback of the ``scheme`` proxy at the member's edge."""
    return f"{scheme}://127.0.0.1:{ns.published[f'{scheme}.sock']}"


def tunnels(ns: NetnsMember, scheme: str) -> list[str]:
    """``host:port`` of every tunnel the ``scheme`` proxy inside opened, in order."""
    log = ns.workdir / f"tunnels-{scheme}"
    return log.read_text().split() if log.exists() else []


async def _edge_proxies(stack: contextlib.AsyncExitStack, workdir: Path) -> None:
    def recorder(scheme: str) -> Callable[[str], None]:
        log = workdir / f"tunnels-{scheme}"

        def record(target: str) -> None:
            with log.open("a") as handle:
                handle.write(target + "\n")

        return record

    for scheme in SCHEMES:
        await stack.enter_async_context(
            serve_proxy(scheme, path=workdir / f"{scheme}.sock", on_tunnel=recorder(scheme))
        )


@contextlib.asynccontextmanager
async def netns_member(
    hub: ControlPlane,
    *,
    timeout: float = 60.0,
    forward_ports: tuple[int, ...] = (),
    controllers: tuple[str, ...] = (),
) -> AsyncIterator[NetnsMember]:
    """:func:`cluster_inventory.testing.netns.netns_member` with the edge proxies inside.

    Fails the test (not skips it) when ``unshare -rn`` is refused.
    """
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    member = _netns_member(
        hub,
        timeout=timeout,
        forward_ports=forward_ports,
        publish=[f"{scheme}.sock" for scheme in SCHEMES],
        controllers=controllers,
        entry_module="tests.support.network.netns",
        env=env,
    )
    try:
        async with member as ns:
            yield ns
    except NetnsRefusedError as exc:
        pytest.fail(str(exc), pytrace=False)


def main() -> None:
    """``python -m tests.support.network.netns ...`` (run under ``unshare``): the member and its
    edge proxies."""
    import asyncio

    asyncio.run(run_inside(inside_arguments(), _edge_proxies))


if __name__ == "__main__":
    main()
