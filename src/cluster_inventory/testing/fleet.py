"""A local fleet: one hub and several member clusters, each a real control plane.

The hub serves the ClusterProfile, PlacementDecision and ClusterProperty CRDs; members serve
ClusterProperty (KEP-2149), as a cluster manager expects to find them. To save memory on a
small machine all control planes share one etcd, each under its own key prefix; they share
nothing else (separate CAs, users, service-account issuers and ports).

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

from cluster_inventory import api, kube
from cluster_inventory.testing._lifecycle import StartStop
from cluster_inventory.testing._process import ManagedProcess
from cluster_inventory.testing.controlplane import ControlPlane, Etcd

__all__ = ["Fleet", "stop_detached"]

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
        self.etcd = Etcd(self.workdir / "etcd", name="fleet-etcd", detach=detach)
        self.hub = ControlPlane(
            hub_name,
            workdir=self.workdir / hub_name,
            etcd=self.etcd,
            controllers=hub_controllers,
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
            property_crds = [c for c in crds if c["spec"]["group"] == api.ABOUT_GROUP]
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
            "pids": [p.pid for p in self.processes if p.pid is not None],
        }
        (self.workdir / _STATE_FILE).write_text(json.dumps(state, indent=2))

    async def stop_member(self, name: str) -> None:
        """Stop one member's kube-apiserver (its data stays), to simulate an outage."""
        await self.member(name).stop_apiserver()

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
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.1)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(workdir, ignore_errors=True)
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False
