"""A member cluster in a network namespace of the test's own (test code only).

``unshare -rn`` gives the member a loopback that is not the host's: its kube-apiserver at
``127.0.0.1:PORT`` inside is nothing (or something else) at ``127.0.0.1:PORT`` outside, so
the cluster manager and the test process truly cannot reach it (``docs/agent.md``). Only
what a user would run crosses, through Unix sockets (the filesystem is shared):

- the hub, **into** the namespace: outside, a Unix socket forwarded to the hub's TCP port;
  inside, ``127.0.0.1:HUB_PORT`` forwarded to that socket, so the agent reaches the hub at
  the address in the hub's kubeconfig (its serving certificate covers 127.0.0.1);
- the consumers' tunnel, **out**: a forward proxy per scheme (``tests/support/network/proxies.py``, SOCKS5
  and HTTP CONNECT) runs inside on a Unix socket, and an outside TCP port forwards to it,
  as a proxy at the member's edge with a port published to the consumers.

``python -m tests.support.network.netns WORKDIR --hub-port P --parent PID`` is the process inside: it starts
etcd and kube-apiserver (:class:`cluster_inventory.testing.ControlPlane`, the fleet's
binaries), the hub bridge and the proxies, writes ``member.json`` and runs until SIGTERM. The
agent runs in the namespace as a process of the test's own (``nsenter``), so the test can
SIGKILL it. Every process carries a parent-death signal (``setpriv --pdeathsig KILL``; the
control plane's through :class:`~cluster_inventory.testing.ManagedProcess`): a test killed
outright leaves nothing behind, and :func:`netns_member` checks on exit that all are gone.

Kept out of ``cluster_inventory.testing``: it needs unprivileged user namespaces (not every
CI runner allows them) and this repository's test proxies.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cluster_inventory import api, kube
from cluster_inventory.api import objects
from cluster_inventory.testing import ControlPlane, ManagedProcess, free_port
from tests.support import REPO
from tests.support.network.proxies import serve_forward, serve_proxy
from tests.support.processes.pids import alive

SCHEMES = ("http", "socks5")
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40


def _loopback_up() -> None:
    """``ip link set lo up`` (a new network namespace's loopback starts down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", _IFF_UP_LOOPBACK_RUNNING))


#: The argv prefix that gives a process SIGKILL when its parent (the test) dies. Set after
#: ``unshare``/``nsenter`` changed the credentials (a credential change can clear it).
_DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL"]


# -- inside the namespace ------------------------------------------------------------------


async def _inside(workdir: Path, hub_port: int, forwards: list[int]) -> None:
    _loopback_up()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    hub_socket = str(workdir / "hub.sock")

    def recorder(scheme: str) -> Callable[[str], None]:
        log = workdir / f"tunnels-{scheme}"

        def record(target: str) -> None:
            with log.open("a") as handle:
                handle.write(target + "\n")

        return record

    member = ControlPlane("netns-member")
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(
            serve_forward(
                lambda h: asyncio.start_server(h, "127.0.0.1", hub_port),
                lambda: asyncio.open_unix_connection(hub_socket),
            )
        )
        for port in forwards:  # a hub-side service the member dials out to (the cluster proxy)
            await stack.enter_async_context(
                serve_forward(
                    lambda h, port=port: asyncio.start_server(h, "127.0.0.1", port),
                    lambda port=port: asyncio.open_unix_connection(
                        str(workdir / f"fwd-{port}.sock")
                    ),
                )
            )
        for scheme in SCHEMES:
            await stack.enter_async_context(
                serve_proxy(
                    scheme,
                    path=workdir / f"{scheme}.sock",
                    on_tunnel=recorder(scheme),
                )
            )
        stack.push_async_callback(member.stop)
        stack.push_async_callback(member.stop_apiserver, kill=True)  # no drain: it dies here
        await member.start()
        crds = [c for c in api.load_crds() if objects.spec(c).get("group") == api.ABOUT_GROUP]
        async with await member.client() as client:
            await kube.ensure_crds(client, crds)  # ClusterProperty, as on the fleet's members
        info = {
            "server": member.server,
            "kubeconfig": str(member.kubeconfig_path),
            "ca": str(member.workdir / "certs" / "serving-ca.crt"),
            "pids": [p.pid for p in member.processes if p.pid is not None],
        }
        staged = workdir / "member.json.new"
        staged.write_text(json.dumps(info))
        staged.rename(workdir / "member.json")
        await stop.wait()


def main() -> None:
    """``python -m tests.support.network.netns WORKDIR --hub-port P --parent PID`` (run under ``unshare``)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--hub-port", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--forward", type=int, action="append", default=[])
    args = parser.parse_args()
    if os.getppid() != args.parent:  # the test died before setpriv took effect
        sys.exit("the test process is gone")
    asyncio.run(_inside(args.workdir, args.hub_port, args.forward))


# -- the test's side -------------------------------------------------------------------------


@dataclass
class NetnsMember:
    """A member control plane in a network namespace the test process cannot reach.

    Attributes:
        workdir: The directory shared with the namespace (its Unix sockets, ``member.json``).
        entry: The process inside (``python -m tests.support.network.netns``); ``nsenter`` joins its namespace.
        server: The member's apiserver URL **inside** (``https://127.0.0.1:PORT``).
        kubeconfig_path: The member's admin kubeconfig (its server is the inside address).
        ca_path: PEM of the member's serving CA.
        proxies: Scheme -> proxy URL on the host's loopback that tunnels into the namespace.
        pids: Every process the namespace holds (the entry, etcd, kube-apiserver, agents).
    """

    workdir: Path
    entry: ManagedProcess
    server: str = ""
    kubeconfig_path: Path = Path()
    ca_path: Path = Path()
    proxies: dict[str, str] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    agents: list[ManagedProcess] = field(default_factory=list)

    def tunnels(self, scheme: str) -> list[str]:
        """``host:port`` of every tunnel the ``scheme`` proxy inside opened, in order."""
        log = self.workdir / f"tunnels-{scheme}"
        return log.read_text().split() if log.exists() else []

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the namespace, dying with the test process."""
        assert self.entry.pid is not None
        enter = ["nsenter", "-t", str(self.entry.pid), "-U", "-n", "--preserve-credentials"]
        return [*enter, "--", *_DIE_WITH_PARENT, *argv]

    def start_agent(self, name: str, *args: str) -> ManagedProcess:
        """``cluster-inventory agent run --name NAME --kubeconfig MEMBER ARGS`` inside.

        Returns:
            The running process (its own session: ``stop(kill=True)`` is a SIGKILL of it).
        """
        argv = [sys.executable, "-m", "cluster_inventory.cli", "agent", "run", "--name", name]
        argv += ["--kubeconfig", str(self.kubeconfig_path), *args]
        log = self.workdir / f"agent-{len(self.agents)}.log"
        agent = ManagedProcess(f"{name}/agent", self.command(argv), log, env=_env())
        agent.start()
        self.agents.append(agent)
        assert agent.pid is not None
        self.pids.append(agent.pid)
        return agent


def _env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _refused() -> str | None:
    """Why ``unshare -rn`` cannot run here, or None."""
    try:
        done = subprocess.run(
            ["unshare", "-rn", "true"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.strip() or f"exit code {done.returncode}"


async def _started(ns: NetnsMember, timeout: float) -> dict[str, Any]:
    """``member.json`` once the entry wrote it (the member is ready then)."""
    deadline = time.monotonic() + timeout
    path = ns.workdir / "member.json"
    while not path.exists():
        if not ns.entry.running:
            raise AssertionError(f"the member in its namespace exited:\n{ns.entry.log_tail(30)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the member in its namespace did not start in {timeout:g} s")
        await asyncio.sleep(0.05)
    info = json.loads(path.read_text())
    assert isinstance(info, dict)
    return info


@contextlib.asynccontextmanager
async def netns_member(
    hub: ControlPlane, *, timeout: float = 60.0, forward_ports: tuple[int, ...] = ()
) -> AsyncIterator[NetnsMember]:
    """A member control plane in a network namespace of its own, bridged to ``hub``.

    Args:
        hub: The hub the agent reaches: its port is forwarded into the namespace.
        timeout: Seconds the member gets to start (etcd, kube-apiserver, the CRDs).
        forward_ports: More host loopback ports the namespace reaches at the same
            ``127.0.0.1:PORT`` (outbound only, as the hub's: e.g. the cluster proxy's).

    Fails the test (not skips it) when ``unshare -rn`` is refused: the test exists to show
    the agent works where nothing routes to the member.

    Raises:
        AssertionError: The member did not start, or a process of the namespace outlived it.
    """
    why = _refused()
    if why is not None:
        pytest.fail(
            f"unshare -rn (an unprivileged user + network namespace) was refused: {why}. "
            "This test needs them (sysctl user.max_user_namespaces > 0, and "
            "kernel.apparmor_restrict_unprivileged_userns=0 where AppArmor restricts them).",
            pytrace=False,
        )
    workdir = Path(tempfile.mkdtemp(prefix="ci-ns-"))  # short: a Unix socket path is <108 bytes
    argv = [
        "unshare",
        "-rn",
        *_DIE_WITH_PARENT,
        sys.executable,
        "-m",
        "tests.support.network.netns",
    ]
    argv += [str(workdir), "--hub-port", str(hub.port), "--parent", str(os.getpid())]
    for port in forward_ports:
        argv += ["--forward", str(port)]
    entry = ManagedProcess("netns-member", argv, workdir / "entry.log", env=_env())
    ns = NetnsMember(workdir, entry)
    try:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(
                serve_forward(
                    lambda h: asyncio.start_unix_server(h, str(workdir / "hub.sock")),
                    lambda: asyncio.open_connection("127.0.0.1", hub.port),
                )
            )
            for port in forward_ports:
                await stack.enter_async_context(
                    serve_forward(
                        lambda h, port=port: asyncio.start_unix_server(
                            h, str(workdir / f"fwd-{port}.sock")
                        ),
                        lambda port=port: asyncio.open_connection("127.0.0.1", port),
                    )
                )
            for scheme in SCHEMES:
                port = free_port()
                path = str(workdir / f"{scheme}.sock")
                await stack.enter_async_context(
                    serve_forward(
                        lambda h, port=port: asyncio.start_server(h, "127.0.0.1", port),
                        lambda path=path: asyncio.open_unix_connection(path),
                    )
                )
                ns.proxies[scheme] = f"{scheme}://127.0.0.1:{port}"
            entry.start()
            assert entry.pid is not None
            ns.pids.append(entry.pid)
            info = await _started(ns, timeout)
            ns.server = str(info["server"])
            ns.kubeconfig_path = Path(str(info["kubeconfig"]))
            ns.ca_path = Path(str(info["ca"]))
            ns.pids += [int(p) for p in info["pids"]]
            yield ns
    finally:
        for agent in ns.agents:
            await agent.stop(kill=True)
        await entry.stop(20.0)
        left = await _wait_dead(ns.pids)
        shutil.rmtree(workdir, ignore_errors=True)
        if left:
            raise AssertionError(f"processes of the member's namespace outlived it: {left}")


async def _wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return left


if __name__ == "__main__":
    main()
