"""A local fleet: one hub and several member clusters, each a real control plane.

The hub serves the ClusterProfile, PlacementDecision and ClusterProperty CRDs; members serve
ClusterProperty (KEP-2149), as a cluster manager expects to find them. To save memory on a
small machine all control planes share one etcd, each under its own key prefix; they share
nothing else (separate CAs, users, service-account issuers and ports).

A fleet started with ``agent_join=True`` (``fleet up``, the demo) can take pull-mode members
as a hub installed with the chart can (``docs/agent.md``): its hub runs kube-controller-manager's
``csrsigning`` controller, which signs ``kubernetes.io/kube-apiserver-client`` CSRs with the
client CA the hub trusts. Nothing else is needed: ``manager accept`` writes each acceptance's
RBAC (its CSR included). Members run no extra controller for it.

A fleet started with ``detach=True`` outlives the Python process that started it (for
``cluster-inventory fleet up --keep``); its PIDs go into ``fleet.json`` in its directory so
:func:`stop_detached` (``fleet down``) can end it later.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster_inventory import api, kube
from cluster_inventory.api import objects
from cluster_inventory.testing._lifecycle import StartStop
from cluster_inventory.testing._process import ManagedProcess, pid_alive
from cluster_inventory.testing.controlplane import (
    SIGNER_CONTROLLER,
    ControlPlane,
    Etcd,
    start_timeout,
    wait_http_ok,
)

__all__ = [
    "Fleet",
    "KeptFleetError",
    "start_detached_member",
    "stop_detached",
    "stop_detached_member",
]

_STATE_FILE = "fleet.json"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class Fleet(StartStop):
    """A hub and named member clusters on loopback.

    Args:
        members: Member names (DNS-1123 labels), or a count (``member1`` ... ``memberN``).
        hub_name: Name of the hub cluster.
        workdir: Directory for everything; a temp dir if None (removed on stop).
        hub_controllers: kube-controller-manager controllers for the hub (None: none).
        member_controllers: kube-controller-manager controllers for each member.
        agent_join: Let agents join the hub (see module docstring): ``csrsigning`` is added
            to the hub's controllers (kube-controller-manager then runs on the hub, not on
            the members) and the agents' RBAC is installed.
        detach: Start processes so they survive this Python process (see module docstring).

    Attributes:
        hub: The hub control plane.
        members: Member control planes by name, in the order given.

    Raises:
        ValueError: A name is not a DNS-1123 label, or names repeat.
    """

    def __init__(
        self,
        members: Sequence[str] | int = 3,
        *,
        hub_name: str = "hub",
        workdir: Path | None = None,
        hub_controllers: Sequence[str] | None = None,
        member_controllers: Sequence[str] | None = None,
        agent_join: bool = False,
        detach: bool = False,
    ) -> None:
        names = (
            [f"member{i}" for i in range(1, members + 1)]
            if isinstance(members, int)
            else list(members)
        )
        for name in (hub_name, *names):
            if not _DNS_LABEL.match(name):
                raise ValueError(f"cluster name {name!r} is not a DNS-1123 label")
        if hub_name in names or len(set(names)) != len(names):
            raise ValueError(f"cluster names must be unique: hub {hub_name!r}, members {names}")
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="ci-fleet-"))
        self.detach = detach
        self.agent_join = agent_join
        hub_chosen = list(hub_controllers or ())
        if agent_join and SIGNER_CONTROLLER not in hub_chosen:
            hub_chosen.append(SIGNER_CONTROLLER)
        self.etcd = Etcd(self.workdir / "etcd", name="fleet-etcd", detach=detach)
        self.hub = ControlPlane(
            hub_name,
            workdir=self.workdir / hub_name,
            etcd=self.etcd,
            controllers=hub_chosen or None,
            detach=detach,
        )
        self.members = {
            name: ControlPlane(
                name,
                workdir=self.workdir / name,
                etcd=self.etcd,
                controllers=member_controllers,
                detach=detach,
            )
            for name in names
        }
        self._adopted: list[ManagedProcess] = []

    @property
    def clusters(self) -> list[ControlPlane]:
        """The hub followed by the members."""
        return [self.hub, *self.members.values()]

    @property
    def processes(self) -> list[ManagedProcess]:
        """Every process of the fleet (etcd included)."""
        procs = [p for cp in self.clusters for p in cp.processes]
        if self.etcd.process is not None:
            procs.append(self.etcd.process)
        return [*self._adopted, *procs]

    def adopt(self, process: ManagedProcess) -> None:
        """Make ``process`` part of the fleet, stopped with it (first).

        A detached fleet records it in ``fleet.json`` so ``fleet down`` stops it too. Used
        for what runs beside the control planes, e.g. the demo's cluster manager. Start
        ``process`` with the fleet's ``detach`` setting.
        """
        self._adopted.append(process)
        if (self.workdir / _STATE_FILE).exists():
            self._write_state()

    def member(self, name: str) -> ControlPlane:
        """Return the member called ``name``; raises ``KeyError`` naming the known members."""
        try:
            return self.members[name]
        except KeyError:
            raise KeyError(f"no member {name!r}; members: {', '.join(self.members)}") from None

    async def start(self) -> None:
        """Start etcd, then every control plane in parallel, then install the CRDs.

        Raises:
            AssetNotFoundError: A binary is missing (the message says how to install it).
            ControlPlaneError: Something did not become ready; everything started is stopped.
        """
        try:
            await self.etcd.start()
            await asyncio.gather(*(cp.start() for cp in self.clusters))
            crds = api.load_crds()
            property_crds = [c for c in crds if objects.spec(c).get("group") == api.ABOUT_GROUP]
            async with await self.hub.client() as hub:
                await kube.ensure_crds(hub, crds)
            for cp in self.members.values():
                async with await cp.client() as member:
                    await kube.ensure_crds(member, property_crds)
            self._write_state()
        except BaseException:
            await self.stop()
            raise

    def _write_state(self) -> None:
        state = {
            "hub": self.hub.name,
            "clusters": {
                cp.name: {"server": cp.server, "kubeconfig": str(cp.kubeconfig_path)}
                for cp in self.clusters
            },
            "pids": [p.pid for p in self.processes if p.running and p.pid is not None],
            "etcd_pid": self.etcd.process.pid if self.etcd.process is not None else None,
            # What `fleet stop-member` / `start-member` need to act on a kept fleet later.
            "apiservers": {
                cp.name: {
                    "pid": proc.pid if proc.running else None,
                    "argv": proc.argv,
                    "log": str(proc.log_path),
                }
                for cp in self.clusters
                if (proc := cp.apiserver_process) is not None
            },
        }
        (self.workdir / _STATE_FILE).write_text(json.dumps(state, indent=2))

    async def stop_member(self, name: str, *, kill: bool = False) -> None:
        """Stop one member's kube-apiserver (its data stays), to simulate an outage.

        Args:
            name: The member.
            kill: SIGKILL (a crash) instead of a graceful stop (see
                :meth:`ControlPlane.stop_apiserver`).
        """
        await self.member(name).stop_apiserver(kill=kill)
        if (self.workdir / _STATE_FILE).exists():
            self._write_state()

    async def start_member(self, name: str) -> None:
        """Start a stopped member's kube-apiserver again on the same address."""
        await self.member(name).start_apiserver()
        self._write_state()

    async def stop(self) -> None:
        """Stop every process (adopted ones first) and, for a temp workdir, remove it."""
        for process in self._adopted:
            await process.stop()
        results = await asyncio.gather(*(cp.stop() for cp in self.clusters), return_exceptions=True)
        await self.etcd.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result


def stop_detached(workdir: Path, *, timeout: float = 20.0) -> list[int]:
    """Stop a fleet that was started with ``detach=True`` and remove its directory.

    Args:
        workdir: The fleet's directory (holding ``fleet.json``).
        timeout: Seconds to wait after SIGTERM before SIGKILL.

    Returns:
        The PIDs that were signalled.

    Raises:
        FileNotFoundError: No fleet state in ``workdir``.
    """
    state = json.loads((workdir / _STATE_FILE).read_text())
    pids = [int(p) for p in state.get("pids", [])]
    etcd = state.get("etcd_pid")
    # etcd last, as Fleet.stop does: a kube-apiserver whose etcd is gone cannot finish its
    # shutdown and would sit out the whole timeout before SIGKILL.
    for phase in ([p for p in pids if p != etcd], [p for p in pids if p == etcd]):
        _terminate(phase, timeout)
    shutil.rmtree(workdir, ignore_errors=True)
    return pids


def _terminate(pids: list[int], timeout: float) -> None:
    """SIGTERM each process group, wait up to ``timeout`` seconds, SIGKILL what is left."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if pid_alive(p)]
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


class KeptFleetError(RuntimeError):
    """A member of a kept fleet cannot be stopped or started as asked; the message says why."""


def _kept_member(workdir: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the kept fleet's state and the apiserver entry of member ``name``."""
    state_file = workdir / _STATE_FILE
    if not state_file.exists():
        raise KeptFleetError(
            f"no kept fleet found in {workdir}; start one with `cluster-inventory fleet up --keep`"
        )
    state = json.loads(state_file.read_text())
    members = [n for n in state.get("clusters", {}) if n != state.get("hub")]
    entry = state.get("apiservers", {}).get(name)
    if name not in members or entry is None:
        raise KeptFleetError(f"no member {name!r} in the kept fleet; members: {', '.join(members)}")
    return state, entry


def stop_detached_member(
    workdir: Path, name: str, *, kill: bool = False, timeout: float = 20.0
) -> int:
    """Stop the kube-apiserver of member ``name`` of a kept fleet (its data stays in etcd).

    The kept-fleet counterpart of :meth:`Fleet.stop_member`, for ``cluster-inventory fleet
    stop-member``: a failure test against a fleet started by another process.

    Args:
        workdir: The kept fleet's directory (holding ``fleet.json``).
        name: The member.
        kill: SIGKILL at once (a crash) instead of SIGTERM and kube-apiserver's drain.
        timeout: Seconds to wait after SIGTERM before SIGKILL.

    Returns:
        The PID that was stopped.

    Raises:
        KeptFleetError: No kept fleet, no such member, or its apiserver is not running.
    """
    state, entry = _kept_member(workdir, name)
    pid = entry.get("pid")
    if pid is not None:
        pid = int(pid)
    if pid is None or not pid_alive(pid):
        raise KeptFleetError(
            f"member {name!r}: kube-apiserver is not running; "
            f"start it with `cluster-inventory fleet start-member {name}`"
        )
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL if kill else signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        while pid_alive(pid):
            time.sleep(0.02)
    entry["pid"] = None
    state["pids"] = [p for p in state.get("pids", []) if p != pid]
    (workdir / _STATE_FILE).write_text(json.dumps(state, indent=2))
    return pid


async def start_detached_member(workdir: Path, name: str) -> int:
    """Start the stopped kube-apiserver of member ``name`` of a kept fleet again.

    Same address, certificates and data as before; the new process outlives this one and
    is recorded in ``fleet.json`` so ``fleet down`` stops it.

    Args:
        workdir: The kept fleet's directory (holding ``fleet.json``).
        name: The member.

    Returns:
        The PID of the new kube-apiserver.

    Raises:
        KeptFleetError: No kept fleet, no such member, or its apiserver already runs.
        ControlPlaneError: It did not become ready (it is stopped again; the message carries
            its last output).
    """
    state, entry = _kept_member(workdir, name)
    if entry.get("pid") is not None and pid_alive(entry["pid"]):
        raise KeptFleetError(f"member {name!r}: kube-apiserver already runs (pid {entry['pid']})")
    proc = ManagedProcess(f"{name}/kube-apiserver", entry["argv"], Path(entry["log"]), detach=True)
    proc.start()
    conn = kube.connection_from_kubeconfig(state["clusters"][name]["kubeconfig"])
    try:
        await wait_http_ok(
            f"{conn.server}/readyz",
            proc=proc,
            timeout=start_timeout(),
            ssl_ctx=kube.ssl_context_for(conn),
        )
    except BaseException:
        await proc.stop(kill=True)
        raise
    assert proc.pid is not None
    entry["pid"] = proc.pid
    state["pids"] = [*state.get("pids", []), proc.pid]
    (workdir / _STATE_FILE).write_text(json.dumps(state, indent=2))
    return proc.pid
