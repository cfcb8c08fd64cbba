"""Fleet start-up: seconds until a hub + N members are ready, and their memory.

Prints, for the same run:
- baseline: one bare control plane (etcd + kube-apiserver), seconds until ready;
- fleet: hub + N members (shared etcd, CRDs installed), seconds until ready, and the ratio
  to the baseline;
- the total RSS of every control-plane process once the fleet is ready, in MiB;
- with --cold: the time to build all assets from Go modules with empty Go caches.

Targets on a 2-core machine: hub + 3 members <= 15 s and <= 2 GiB.

Usage: uv run python bench/fleet_startup.py [--members 3] [--runs 3] [--controllers] [--cold]
       uv run python bench/fleet_startup.py --smoke   (1 member, 1 run)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import SMOKE_HELP, require, require_times, rss_mib

from cluster_inventory.testing import DEFAULT_CONTROLLERS, ControlPlane, Fleet, install_assets


async def one_control_plane() -> float:
    started = time.perf_counter()
    cp = ControlPlane("baseline")
    await cp.start()
    elapsed = time.perf_counter() - started
    await cp.stop()
    return elapsed


async def one_fleet(members: int, controllers: bool) -> tuple[float, float]:
    chosen = DEFAULT_CONTROLLERS if controllers else None
    started = time.perf_counter()
    fleet = Fleet(members, hub_controllers=chosen, member_controllers=chosen)
    await fleet.start()
    elapsed = time.perf_counter() - started
    memory = rss_mib(*(p.pid for p in fleet.processes if p.pid))
    await fleet.stop()
    return elapsed, memory


def cold_build() -> float:
    with tempfile.TemporaryDirectory(prefix="cold-assets-") as tmp:
        os.environ["CLUSTER_INVENTORY_CACHE_DIR"] = tmp
        started = time.perf_counter()
        install_assets()
        elapsed = time.perf_counter() - started
        del os.environ["CLUSTER_INVENTORY_CACHE_DIR"]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--controllers",
        action="store_true",
        help="also run kube-controller-manager on every cluster",
    )
    parser.add_argument(
        "--cold", action="store_true", help="also time a build of every asset with empty Go caches"
    )
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.members, args.runs, args.cold = 1, 1, False
    install_assets()
    base, fleet, memory = [], [], []
    for _ in range(args.runs):
        base.append(asyncio.run(one_control_plane()))
        seconds, mib = asyncio.run(one_fleet(args.members, args.controllers))
        fleet.append(seconds)
        memory.append(mib)
    b, f, m = statistics.median(base), statistics.median(fleet), statistics.median(memory)
    require(len(base) == len(fleet) == args.runs, f"{args.runs} runs of each measured")
    require_times(baseline=b, fleet=f, rss=m)
    require(m > 0, "the fleet's processes use memory")
    label = f"hub + {args.members} members" + (" + controller-managers" if args.controllers else "")
    print(f"runs: {args.runs} (medians)")
    print(f"baseline, one control plane ready: {b:6.2f} s")
    print(f"fleet, {label} ready: {f:6.2f} s   ratio to baseline: {f / b:4.2f}x")
    print(f"fleet RSS of control-plane processes: {m:7.0f} MiB")
    if args.cold:
        print(
            f"cold asset build (etcd, kube-apiserver, kube-controller-manager, kubectl): "
            f"{cold_build():6.0f} s"
        )
    print(f"assets: {Path(install_assets()).resolve()}")


if __name__ == "__main__":
    main()
