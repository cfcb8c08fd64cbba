"""One (N, R) run of the manager mode while it runs: what its phases share."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from _cpu_limit import CpuLimit

from cluster_inventory import kube
from cluster_inventory.kube.informer import Informer
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.virtual_members import VirtualMembers

from .leases import LeaseWatch
from .meter import CpuMeter
from .profiles import ProfileWatch
from .record import Metrics
from .replicas import Replica, spawn
from .settings import RunNames, Settings


@dataclass(kw_only=True)
class LiveRun:
    """The clients, watches and processes of one run, and the marks its phases leave.

    ``pids`` (process label -> PIDs) is the CPU meter's, so a replica spawned later (the
    join) is counted from then on. ``started`` is the perf-counter time of the spawn;
    ``windows`` the perf-counter windows of the phases; ``scrapes`` the replicas' /metrics by
    label; ``victim`` and ``killed`` the replica SIGKILLed and when (its Lease going is the
    benchmark's doing, not a shard change).
    """

    fleet: Fleet
    vm: VirtualMembers
    hub: kube.ApiClient
    n: int
    r: int
    s: Settings
    names: RunNames
    limit: CpuLimit | None
    watch: ProfileWatch
    leases: LeaseWatch
    tokens: Informer
    pids: dict[str, list[int]]
    meter: CpuMeter
    replicas: dict[str, Replica] = field(default_factory=dict)
    started: float = 0.0
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    scrapes: dict[str, dict[str, Metrics]] = field(default_factory=dict)
    victim: str | None = None
    killed: float = math.inf

    def spawn(self, name: str) -> Replica:
        """Start replica ``name`` of this run (under its CPU limit, if any) and meter it."""
        rep = spawn(
            name,
            self.names.run,
            self.names.system,
            str(self.fleet.hub.kubeconfig_path),
            self.s,
            self.limit,
        )
        self.replicas[name] = rep
        self.pids[f"replica {name}"] = [rep.proc.pid]
        return rep

    async def scrape(self, label: str) -> None:
        """Keep every replica's /metrics now under ``label``."""
        self.scrapes[label] = {
            name: await asyncio.to_thread(rep.metrics) for name, rep in self.replicas.items()
        }
