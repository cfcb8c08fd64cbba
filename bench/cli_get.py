"""`cluster-inventory get` (the kubectl plugin) against `kubectl get clusterprofiles`.

Starts one real hub, writes N ClusterProfiles with full status into one inventory namespace,
then runs both commands in turn (A B A B ..., so drift of the machine's speed hits both) and
prints the median wall time of each, the median of the per-pair ratios, and the median peak
RSS of each command. The baseline is kubectl, a Go binary: what a user would otherwise type.

Each command runs under GNU time (``/usr/bin/time -f %M``, Debian's ``time``), which forks it
from its own small process and reports that child's peak RSS. Reading ``ru_maxrss`` of a
child forked from this benchmark instead would report at least the benchmark's own RSS: Linux
carries a process's high-water mark across ``exec``, and the forked child starts as a copy of
this process.

    uv run python bench/cli_get.py --sizes 100 1000 --runs 9
    uv run python bench/cli_get.py --smoke   (N=3, one run)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SMOKE_HELP, bounded, require, require_times

from cluster_inventory import kube
from cluster_inventory.testing import Fleet, find_binary

NAMESPACE = "bench-inventory"


def _profile(i: int) -> dict:
    name = f"member-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"x-k8s.io/cluster-manager": "bench"},
        },
        "spec": {"displayName": name, "clusterManager": {"name": "bench"}},
    }


def _status(i: int) -> dict:
    return {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True",
                "reason": "APIServerReady",
                "message": "readyz: all checks passed",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            }
        ],
        "version": {"kubernetes": "v1.36.3"},
        "properties": [{"name": "region", "value": f"region-{i % 7}"}],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": f"https://member-{i:05d}.example.com:6443",
                    "extensions": [
                        {
                            "name": "client.authentication.k8s.io/exec",
                            "extension": {"clusterName": f"member-{i:05d}"},
                        }
                    ],
                },
            }
        ],
    }


async def _populate(fleet: Fleet, n: int, have: int) -> None:
    async with await fleet.hub.client() as hub:
        if have == 0:
            await kube.apply(
                hub, kube.NAMESPACES, {"metadata": {"name": NAMESPACE}}, field_manager="bench"
            )

        async def one(i: int) -> None:
            await kube.apply(hub, kube.CLUSTER_PROFILES, _profile(i), field_manager="bench")
            body = {**_profile(i), "status": _status(i)}
            await kube.apply(
                hub, kube.CLUSTER_PROFILES, body, field_manager="bench", subresource="status"
            )

        await bounded([one(i) for i in range(have, n)], limit=16)


#: GNU time: it reports the peak RSS of the command it forks from its own small process.
GNU_TIME = "/usr/bin/time"


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB (GNU time's ``%M`` of the command) and stdout of one run.

    Raises:
        SystemExit: The command exited non-zero, or GNU time gave no figure.
    """
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as peak:
        started = time.perf_counter()
        proc = subprocess.run(
            [GNU_TIME, "-f", "%M", "-o", peak.name, *argv],
            stdout=out,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"{argv} exited {proc.returncode}")
        kib = peak.read().strip()
        if not kib.isdigit():
            raise SystemExit(f"GNU time gave no peak RSS for {argv}: {kib!r}")
        out.seek(0)
        return wall, int(kib) / 1024, out.read().decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.runs = [3], 1
    kubectl = str(find_binary("kubectl"))
    if not os.access(GNU_TIME, os.X_OK):
        raise SystemExit(
            f"{GNU_TIME} is missing: the peak RSS of each command is GNU time's; "
            "run 'sudo apt-get install -y time' (make assets installs it as root)"
        )
    fleet = Fleet([])
    asyncio.run(fleet.start())
    try:
        env = {**os.environ, "KUBECONFIG": str(fleet.hub.kubeconfig_path)}
        # The console script, as a user (or kubectl, for the plugin) runs it.
        ours_cmd = [str(Path(sys.executable).parent / "kubectl-inventory"), "get"]
        helps, floors = [], []
        for _ in range(max(5, args.runs)):
            helps.append(_run([*ours_cmd[:-1], "--help"], env)[0])
            floors.append(_run([sys.executable, "-I", "-S", "-c", "pass"], env)[0])
        require_times(help=statistics.median(helps), floor=statistics.median(floors))
        print(
            f"cluster-inventory --help: {statistics.median(helps) * 1000:.0f} ms p50 "
            f"(target <= 150 ms); a bare interpreter (python -I -S -c pass): "
            f"{statistics.median(floors) * 1000:.0f} ms",
            flush=True,
        )
        have = 0
        print(
            f"{'N':>6} {'format':>8} {'ours p50':>10} {'kubectl p50':>12} {'ratio p50':>10} {'ours peak':>10} {'kubectl peak':>13}"
        )
        for n in args.sizes:
            asyncio.run(_populate(fleet, n, have))
            have = n
            for fmt in ("table", "json"):
                extra = ["-n", NAMESPACE] + ([] if fmt == "table" else ["-o", "json"])
                ours, theirs, ratios = [], [], []
                _run([*ours_cmd, *extra], env)  # warm-up: page cache, discovery cache
                _run([kubectl, "get", "clusterprofiles", *extra], env)
                peaks_ours, peaks_theirs = [], []
                for _ in range(args.runs):
                    a, pa, out_a = _run([*ours_cmd, *extra], env)
                    b, pb, out_b = _run([kubectl, "get", "clusterprofiles", *extra], env)
                    if fmt == "json" and out_a != out_b:
                        raise SystemExit("json output differs from kubectl's")
                    rows = [line for line in out_a.splitlines() if line.startswith("member-")]
                    require(fmt == "json" or len(rows) == n, f"N={n}: {n} table rows printed")
                    require_times(ours=a, kubectl=b, ours_peak=pa, kubectl_peak=pb)
                    ours.append(a)
                    theirs.append(b)
                    ratios.append(a / b)
                    peaks_ours.append(pa)
                    peaks_theirs.append(pb)
                print(
                    f"{n:>6} {fmt:>8} {statistics.median(ours) * 1000:>8.0f}ms {statistics.median(theirs) * 1000:>10.0f}ms "
                    f"{statistics.median(ratios):>9.2f}x {statistics.median(peaks_ours):>8.0f}MiB "
                    f"{statistics.median(peaks_theirs):>11.0f}MiB",
                    flush=True,
                )
    finally:
        asyncio.run(fleet.stop())


if __name__ == "__main__":
    main()
