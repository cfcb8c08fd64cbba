"""A member cluster in a network namespace of its own: nothing on the host routes to it.

``unshare -rn`` gives the member a loopback that is not the host's: its kube-apiserver at
``127.0.0.1:PORT`` inside is nothing (or something else) at ``127.0.0.1:PORT`` outside, so
a cluster manager, a consumer or a test on the host truly cannot reach it, as a member
behind NAT (``docs/agent.md``, ``docs/cluster-proxy.md``). Only what a user would let
through crosses, over Unix sockets in a shared directory:

- the hub, **into** the namespace: outside, a Unix socket forwarded to the hub's TCP port;
  inside, ``127.0.0.1:HUB_PORT`` forwarded to that socket, so an agent reaches the hub at the
  address in the hub's kubeconfig (its serving certificate covers 127.0.0.1); the same for
  each of ``forward_ports`` (e.g. the cluster proxy's tunnel endpoint), outbound only;
- ``publish``: Unix sockets a process inside serves, each given a host loopback port (a port
  published at the member's edge; this repository's tests put forward proxies there).

``python -m cluster_inventory.testing.netns WORKDIR --hub-port P --parent PID`` is the
process inside (:func:`run_inside`): it starts etcd and kube-apiserver
(:class:`~cluster_inventory.testing.ControlPlane`, the fleet's binaries), installs the
``about.k8s.io`` CRDs, writes ``member.json`` and serves a control socket (the member
admin's hand inside: apply objects, stop and start the API server) until SIGTERM. Agents
and other processes run in the namespace through ``nsenter``
(:meth:`NetnsMember.command`). Every process carries a parent-death signal (``setpriv
--pdeathsig KILL``; the control plane's through :class:`ManagedProcess`): an owner killed
outright leaves nothing behind, and :func:`netns_member` checks on exit that all are gone.

Needs unprivileged user namespaces (``sysctl user.max_user_namespaces`` > 0; where AppArmor
restricts them, ``kernel.apparmor_restrict_unprivileged_userns=0``): :func:`netns_refused`
says why they are not available, and :func:`netns_member` raises
:class:`NetnsRefusedError` then.
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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_inventory import api, kube
from cluster_inventory.api import objects
from cluster_inventory.testing._forward import tcp_to_unix, unix_to_tcp
from cluster_inventory.testing._process import ManagedProcess, free_port, pid_alive
from cluster_inventory.testing.controlplane import ControlPlane

__all__ = [
    "ENTRY_MODULE",
    "NetnsMember",
    "NetnsMemberError",
    "NetnsRefusedError",
    "netns_member",
    "netns_refused",
    "run_inside",
]

#: The module run inside the namespace by default.
ENTRY_MODULE = "cluster_inventory.testing.netns"
#: The argv prefix that gives a process SIGKILL when its parent dies. Set after
#: ``unshare``/``nsenter`` changed the credentials (a credential change can clear it).
_DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL"]
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_CONTROL = "control.sock"
_INFO = "member.json"


class NetnsRefusedError(RuntimeError):
    """Unprivileged user and network namespaces are not available here (the message says why)."""


class NetnsMemberError(RuntimeError):
    """The member in its namespace did not start, refused a request, or left processes behind."""


def _loopback_up() -> None:
    """``ip link set lo up`` (a new network namespace's loopback starts down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", _IFF_UP_LOOPBACK_RUNNING))


# -- inside the namespace ------------------------------------------------------------------

#: What a caller's entry module adds inside, beside the member: given the exit stack the
#: namespace's servers live on and the shared directory.
InsideExtra = Callable[[contextlib.AsyncExitStack, Path], Awaitable[None]]


def inside_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the inside process's arguments (what :func:`netns_member` passes).

    Exits the process if its parent (the owner) is already gone.
    """
    parser = argparse.ArgumentParser(prog=f"python -m {ENTRY_MODULE}")
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--hub-port", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--forward", type=int, action="append", default=[])
    parser.add_argument("--controller", action="append", default=[])
    args = parser.parse_args(argv)
    if os.getppid() != args.parent:  # the owner died before setpriv took effect
        sys.exit("the owner of the namespace is gone")
    return args


async def run_inside(args: argparse.Namespace, extra: InsideExtra | None = None) -> None:
    """The process inside the namespace: the member, the bridges, the control socket.

    Args:
        args: :func:`inside_arguments`' result.
        extra: More servers the caller's entry module runs inside (e.g. forward proxies
            on Unix sockets it publishes).
    """
    workdir: Path = args.workdir
    _loopback_up()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    member = ControlPlane("netns-member", controllers=args.controller or None)
    async with contextlib.AsyncExitStack() as stack:
        for port, path in (
            (args.hub_port, "hub.sock"),
            *((p, f"fwd-{p}.sock") for p in args.forward),
        ):
            await stack.enter_async_context(tcp_to_unix(port, workdir / path))
        if extra is not None:
            await extra(stack, workdir)
        stack.push_async_callback(member.stop)
        stack.push_async_callback(member.stop_apiserver, kill=True)  # no drain: it dies here
        await member.start()
        crds = [c for c in api.load_crds() if objects.spec(c).get("group") == api.ABOUT_GROUP]
        async with await member.client() as client:
            await kube.ensure_crds(client, crds)  # ClusterProperty, as on the fleet's members
        control = await asyncio.start_unix_server(
            lambda r, w: _serve_control(member, r, w), str(workdir / _CONTROL)
        )
        stack.push_async_callback(control.wait_closed)
        stack.callback(control.close)
        info = {
            "server": member.server,
            "kubeconfig": str(member.kubeconfig_path),
            "ca": str(member.workdir / "certs" / "serving-ca.crt"),
            "pids": [p.pid for p in member.processes if p.pid is not None],
        }
        staged = workdir / f"{_INFO}.new"
        staged.write_text(json.dumps(info))
        staged.rename(workdir / _INFO)
        await stop.wait()


async def _serve_control(
    member: ControlPlane, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """One request per connection: a JSON line in, ``{"ok": true}`` or ``{"error": ...}`` out."""
    try:
        request = json.loads(await reader.readline())
        await _control(member, request)
        answer: dict[str, Any] = {"ok": True}
    except Exception as exc:  # the owner reads it; the namespace keeps serving
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    writer.write(json.dumps(answer).encode() + b"\n")
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def _control(member: ControlPlane, request: dict[str, Any]) -> None:
    what = request.get("do")
    if what == "stop-apiserver":
        await member.stop_apiserver(kill=bool(request.get("kill")))
    elif what == "start-apiserver":
        await member.start_apiserver()
    elif what == "apply":
        async with await member.client() as client:
            for obj in request["objects"]:
                kind = f"{obj['apiVersion']}/{obj['kind']}"
                resource = await kube.resolve_kind(client, kind)
                await kube.apply(client, resource, obj, field_manager=str(request["field_manager"]))
    else:
        raise ValueError(f"unknown request {what!r}")


def main() -> None:
    """``python -m cluster_inventory.testing.netns WORKDIR --hub-port P --parent PID``."""
    asyncio.run(run_inside(inside_arguments()))


# -- the owner's side ------------------------------------------------------------------------


@dataclass
class NetnsMember:
    """A member control plane in a network namespace the host cannot reach.

    Attributes:
        workdir: The directory shared with the namespace (its Unix sockets, ``member.json``).
        entry: The process inside; ``nsenter`` joins its namespaces.
        server: The member's API server URL **inside** (``https://127.0.0.1:PORT``).
        kubeconfig_path: The member's admin kubeconfig (its server is the inside address).
        ca_path: PEM of the member's serving CA.
        published: Unix socket name (in ``workdir``) -> the host loopback port it is
            published on.
        pids: Every process the namespace holds (the entry, etcd, kube-apiserver, agents).
        processes: What :meth:`start` ran inside (stopped before the namespace).
    """

    workdir: Path
    entry: ManagedProcess
    env: dict[str, str] = field(default_factory=dict)
    server: str = ""
    kubeconfig_path: Path = Path()
    ca_path: Path = Path()
    published: dict[str, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    processes: list[ManagedProcess] = field(default_factory=list)

    @property
    def ca_pem(self) -> bytes:
        """PEM bytes of the member's serving CA."""
        return self.ca_path.read_bytes()

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace, dying with its owner."""
        assert self.entry.pid is not None
        enter = ["nsenter", "-t", str(self.entry.pid), "-U", "-n", "--preserve-credentials"]
        return [*enter, "--", *_DIE_WITH_PARENT, *argv]

    def start(self, name: str, argv: Sequence[str], log_path: Path) -> ManagedProcess:
        """Start ``argv`` inside the namespace as a long-running process (e.g. an agent).

        Args:
            name: The process's name in errors.
            argv: The command.
            log_path: Where its output goes.

        Returns:
            The running process (its own session: ``stop(kill=True)`` is a SIGKILL of it).

        Raises:
            OSError: ``nsenter`` could not be executed.
        """
        process = ManagedProcess(name, self.command(argv), log_path, env=self.env)
        process.start()
        self.processes.append(process)
        assert process.pid is not None
        self.pids.append(process.pid)
        return process

    def start_agent(self, name: str, *args: str) -> ManagedProcess:
        """``cluster-inventory agent run --name NAME --kubeconfig MEMBER ARGS`` inside.

        Returns:
            The running agent (its log: ``workdir/agent-N.log``).
        """
        argv = [sys.executable, "-m", "cluster_inventory.cli", "agent", "run", "--name", name]
        argv += ["--kubeconfig", str(self.kubeconfig_path), *args]
        log = self.workdir / f"agent-{len(self.processes)}.log"
        return self.start(f"{name}/agent", argv, log)

    async def apply(self, manifests: Sequence[Mapping[str, Any]], field_manager: str) -> None:
        """Server-side apply ``manifests`` on the member, from inside, as its admin.

        ``manifests`` are full objects (``apiVersion``, ``kind``, ``metadata``).

        Raises:
            NetnsMemberError: A kind is not served or the member refused a write (the
                message says which).
        """
        await self._request(
            {"do": "apply", "objects": list(manifests), "field_manager": field_manager}
        )

    async def stop_apiserver(self, *, kill: bool = False) -> None:
        """Stop the member's kube-apiserver (its data stays): an outage (SIGKILL with ``kill``)."""
        await self._request({"do": "stop-apiserver", "kill": kill})

    async def start_apiserver(self) -> None:
        """Start the member's kube-apiserver again on the same address."""
        await self._request({"do": "start-apiserver"})

    async def _request(self, request: dict[str, Any]) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(str(self.workdir / _CONTROL))
        except OSError as exc:
            raise NetnsMemberError(f"the member's namespace does not answer: {exc}") from None
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            answer = json.loads(await reader.readline() or b"{}")
        finally:
            writer.close()
        if not answer.get("ok"):
            error = answer.get("error", "no answer")
            raise NetnsMemberError(f"the member refused {request['do']}: {error}")


def netns_refused() -> str | None:
    """Why ``unshare -rn`` (an unprivileged user and network namespace) cannot run here, or None."""
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
    path = ns.workdir / _INFO
    while not path.exists():
        if not ns.entry.running:
            raise NetnsMemberError(f"the member in its namespace exited:\n{ns.entry.log_tail(30)}")
        if time.monotonic() > deadline:
            raise NetnsMemberError(f"the member in its namespace did not start in {timeout:g} s")
        await asyncio.sleep(0.05)
    info = json.loads(path.read_text())
    assert isinstance(info, dict)
    return info


@contextlib.asynccontextmanager
async def netns_member(
    hub: ControlPlane,
    *,
    timeout: float = 60.0,
    forward_ports: Sequence[int] = (),
    publish: Sequence[str] = (),
    controllers: Sequence[str] = (),
    entry_module: str = ENTRY_MODULE,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[NetnsMember]:
    """A member control plane in a network namespace of its own, bridged to ``hub``.

    Args:
        hub: The hub the member's agent reaches: its port is forwarded into the namespace.
        timeout: Seconds the member gets to start (etcd, kube-apiserver, the CRDs).
        forward_ports: More host loopback ports the namespace reaches at the same
            ``127.0.0.1:PORT`` (outbound only, as the hub's: e.g. the cluster proxy's).
        publish: Unix socket names (in the workdir) a process inside serves; each gets a
            free host loopback port (:attr:`NetnsMember.published`).
        controllers: kube-controller-manager controllers to run beside the member's API
            server (none by default; ``clusterrole-aggregation`` fills ``view``, ``edit``).
        entry_module: The module run inside (its ``main`` calls :func:`run_inside`).
        env: More environment for the processes inside (e.g. ``PYTHONPATH``).

    Raises:
        NetnsRefusedError: ``unshare -rn`` is refused here (the message says why and how to
            allow it).
        NetnsMemberError: The member did not start, or a process of the namespace outlived it.
    """
    why = netns_refused()
    if why is not None:
        raise NetnsRefusedError(
            f"unshare -rn (an unprivileged user + network namespace) was refused: {why}. "
            "A member in its own network namespace needs them (sysctl "
            "user.max_user_namespaces > 0, and kernel.apparmor_restrict_unprivileged_userns=0 "
            "where AppArmor restricts them)."
        )
    workdir = Path(tempfile.mkdtemp(prefix="ci-ns-"))  # short: a Unix socket path is <108 bytes
    argv = ["unshare", "-rn", *_DIE_WITH_PARENT, sys.executable, "-m", entry_module]
    argv += [str(workdir), "--hub-port", str(hub.port), "--parent", str(os.getpid())]
    for port in forward_ports:
        argv += ["--forward", str(port)]
    for controller in controllers:
        argv += ["--controller", controller]
    environment = dict(env or {})
    entry = ManagedProcess("netns-member", argv, workdir / "entry.log", env=environment)
    ns = NetnsMember(workdir, entry, environment)
    try:
        async with contextlib.AsyncExitStack() as stack:
            for port, path in (
                (hub.port, "hub.sock"),
                *((p, f"fwd-{p}.sock") for p in forward_ports),
            ):
                await stack.enter_async_context(unix_to_tcp(workdir / path, port))
            for name in publish:
                port = free_port()
                await stack.enter_async_context(tcp_to_unix(port, workdir / name))
                ns.published[name] = port
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
        for process in ns.processes:
            await process.stop(kill=True)
        await entry.stop(20.0)
        left = await _wait_dead(ns.pids)
        shutil.rmtree(workdir, ignore_errors=True)
        if left:
            raise NetnsMemberError(f"processes of the member's namespace outlived it: {left}")


async def _wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if pid_alive(p)]) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return left


if __name__ == "__main__":
    main()
