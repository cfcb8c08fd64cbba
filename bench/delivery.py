"""Fleet delivery and placement: apply a 20-object set to N profiles; placement over M profiles.

Against a local fleet (hub + 2 real members; the N profiles are spread over the two members,
profiles of one member share its token Secret, so every profile is a target of its own but
the members are shared):

- **apply**: ``cluster-inventory apply -f set.yaml -l bench=delivery`` (the CLI as a user
  runs it, process start-up included) applies a 20-object set (12 ConfigMaps, 4
  ServiceAccounts, 2 Roles, 2 RoleBindings) to the N members. Timed cold (objects created),
  warm (everything unchanged: applies that change nothing are not sent) and warm with
  ``--no-skip-unchanged`` (every apply sent, as kubectl sends them). **Baseline, same run**: ``kubectl apply --server-side -f
  set.yaml`` once per cluster, in a loop, each with a kubeconfig that reaches the member
  through the same exec plugin (``cluster-inventory kubeconfig``'s shape). Printed: the loop's
  total, one kubectl apply (mean), and the ratios. Targets: faster than the loop, and <= 2x
  one kubectl apply in total;
- **placement**: M profiles (2/3 in eu regions), a Placement choosing
  ``region in (eu-west-1, eu-central-1)``: seconds from the Placement's creation until every
  slice is complete (a consumer's read), then a fresh scheduler over the unchanged world:
  seconds until it has reconciled, and its write count (target 0).

Usage: uv run python bench/delivery.py [--profiles 100] [--placement-profiles 1000]
           [--kubectl-clusters N]   (default: all N)
       uv run python bench/delivery.py --smoke   (4 profiles, placement over 60)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import SMOKE_HELP, bounded, require, require_times
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC, SECRET_TOKEN_KEY
from cluster_inventory.credentials import kubeconfig_for_profile
from cluster_inventory.integrations.placement import PLACEMENTS, PlacementScheduler, read_decisions
from cluster_inventory.testing import Fleet, find_binary

PLUGIN = Path(sys.executable).parent / "cluster-inventory-secretreader"
MEMBER_NS = "bench-delivery"
LABEL = "bench=delivery"


def manifest_set() -> list[dict]:
    """20 objects in one namespace of the member."""
    objs: list[dict] = []
    for i in range(12):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cfg-{i:02d}", "namespace": MEMBER_NS},
                "data": {"index": str(i), "payload": "x" * 200},
            }
        )
    for i in range(4):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": f"sa-{i}", "namespace": MEMBER_NS},
            }
        )
    for i in range(2):
        objs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": f"role-{i}", "namespace": MEMBER_NS},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
            }
        )
        objs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"role-{i}", "namespace": MEMBER_NS},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": f"role-{i}",
                },
                "subjects": [{"kind": "ServiceAccount", "name": f"sa-{i}", "namespace": MEMBER_NS}],
            }
        )
    return objs


async def prepare(fleet: Fleet, hub, ns: str) -> dict[str, str]:
    """A deployer ServiceAccount on each member (cluster-admin: the set holds RBAC objects);
    its token in one hub Secret per member. Returns member name -> Secret name."""
    secrets = {}
    for member in fleet.members.values():
        async with await member.client() as admin:
            await kube.apply(
                admin, kube.NAMESPACES, {"metadata": {"name": MEMBER_NS}}, field_manager="bench"
            )
            await kube.apply(
                admin,
                kube.SERVICE_ACCOUNTS,
                {"metadata": {"name": "deployer", "namespace": MEMBER_NS}},
                field_manager="bench",
            )
            await kube.apply(
                admin,
                kube.CLUSTER_ROLE_BINDINGS,
                {
                    "metadata": {"name": "bench-deployer"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "deployer", "namespace": MEMBER_NS}
                    ],
                },
                field_manager="bench",
            )
            token = await kube.request_service_account_token(admin, MEMBER_NS, "deployer")
        secret = f"token-{member.name}"
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "metadata": {"name": secret, "namespace": ns},
                "data": {SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode()},
            },
            field_manager="bench",
            force=True,
        )
        secrets[member.name] = secret
    return secrets


def healthy(region: str | None = None) -> dict:
    status: dict = {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True",
                "reason": "Bench",
                "message": "bench",
                "lastTransitionTime": "2026-11-24T00:00:00Z",
            }
        ]
    }
    if region:
        status["properties"] = [{"name": "region", "value": region}]
    return status


async def profile(hub, ns: str, name: str, labels: dict, status: dict) -> dict:
    await kube.apply(
        hub,
        kube.CLUSTER_PROFILES,
        {
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"clusterManager": {"name": "bench"}},
        },
        field_manager="bench",
        force=True,
    )
    return await kube.request(
        hub,
        "PATCH",
        kube.CLUSTER_PROFILES.path(ns, name) + "/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


def provider_file(path: Path, ns: str, hub_kubeconfig: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "providers": [
                    {
                        "name": "secretreader",
                        "execConfig": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": str(PLUGIN),
                            "args": ["--namespace", ns],
                            "env": [{"name": "KUBECONFIG", "value": str(hub_kubeconfig)}],
                            "provideClusterInfo": True,
                        },
                    }
                ]
            }
        )
    )
    return path


#: The CLI and its plugin run with bytecode caches, as an installed package has them. A
#: machine with PYTHONDONTWRITEBYTECODE=1 (this one) otherwise compiles ~290 modules on every
#: start (0.8 s); :func:`warm_bytecode` writes the caches once before anything is timed.
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_cli(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cluster_inventory.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
        env=CLI_ENV,
    )
    return time.perf_counter() - started, done


def warm_bytecode() -> None:
    """Write the bytecode caches of every module the CLI and the plugin import."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0",
         str(Path(__file__).resolve().parents[1] / "src"),
         *(str(Path(p)) for p in sys.path if p.endswith("site-packages"))],
        capture_output=True, timeout=900, check=False, env=CLI_ENV,
    )  # fmt: skip


async def bench_apply(fleet: Fleet, hub, n: int, kubectl_clusters: int, work: Path) -> dict:
    ns = f"bench-delivery-{n}"
    await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
    secrets = await prepare(fleet, hub, ns)
    members = list(fleet.members.values())

    async def make(i: int) -> dict:
        member = members[i % len(members)]
        status = healthy()
        status["accessProviders"] = [
            {
                "name": "secretreader",
                "cluster": {
                    "server": member.server,
                    "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                    "extensions": [
                        {"name": EXTENSION_EXEC, "extension": {"clusterName": secrets[member.name]}}
                    ],
                },
            }
        ]
        return await profile(hub, ns, f"c{i:04d}", {"bench": "delivery"}, status)

    profiles = await bounded([make(i) for i in range(n)])
    set_file = work / "set.yaml"
    set_file.write_text(yaml.safe_dump_all(manifest_set()))
    providers = provider_file(work / f"providers-{n}.json", ns, fleet.hub.kubeconfig_path)
    common = [
        "apply", "-f", str(set_file), "-n", ns, "-l", LABEL, "--provider-file", str(providers),
        "--kubeconfig", str(fleet.hub.kubeconfig_path), "-o", "json",
    ]  # fmt: skip
    warm_bytecode()
    cold, first = run_cli(*common)
    require(first.returncode == 0, f"cold apply exited {first.returncode}: {first.stderr[-500:]}")
    rows = json.loads(first.stdout)
    require(len(rows) == 20 * n, f"cold apply printed {len(rows)} rows, expected {20 * n}")
    require(all(r["result"] != "failed" for r in rows), "a cold apply row failed")
    warm, second = run_cli(*common)
    require(second.returncode == 0, f"warm apply exited {second.returncode}")
    warm_rows = json.loads(second.stdout)
    require(
        len(warm_rows) == 20 * n and {r["result"] for r in warm_rows} == {"unchanged"},
        "the warm apply changed something",
    )
    # every apply sent, as kubectl sends them (no skipping of applies that change nothing)
    every, third = run_cli(*common, "--no-skip-unchanged")
    require(third.returncode == 0, f"warm --no-skip-unchanged apply exited {third.returncode}")
    require(
        {r["result"] for r in json.loads(third.stdout)} == {"unchanged"},
        "the warm --no-skip-unchanged apply changed something",
    )

    kubectl = str(find_binary("kubectl"))
    loop_times = []
    for p in profiles[:kubectl_clusters]:
        config = kubeconfig_for_profile(
            p,
            command=str(PLUGIN),
            args=["--namespace", ns, "--kubeconfig", str(fleet.hub.kubeconfig_path)],
        )
        path = work / f"kc-{p['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(config))
        started = time.perf_counter()
        done = subprocess.run(
            [
                kubectl,
                "--kubeconfig",
                str(path),
                "--cache-dir",
                str(work / "kubectl-cache"),
                "apply",
                "--server-side",
                "-f",
                str(set_file),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
            env=CLI_ENV,  # the plugin kubectl runs is ours too
        )
        loop_times.append(time.perf_counter() - started)
        require(done.returncode == 0, f"kubectl apply failed: {done.stderr[-300:]}")
        require(done.stdout.count("serverside-applied") == 20, "kubectl applied fewer objects")
    one = statistics.mean(loop_times)
    loop_total = sum(loop_times) * n / len(loop_times)
    require_times(cold=cold, warm=warm, every=every, kubectl_one=one, kubectl_loop=loop_total)
    return {
        "n": n,
        "cold": cold,
        "warm": warm,
        "every": every,
        "kubectl_one": one,
        "kubectl_loop": loop_total,
        "kubectl_measured": len(loop_times),
    }


async def bench_placement(hub, m: int) -> dict:
    ns = f"bench-placement-{m}"
    await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
    regions = ["eu-west-1", "eu-central-1", "us-east-1"]
    await bounded(
        [profile(hub, ns, f"p{i:05d}", {"env": "prod"}, healthy(regions[i % 3])) for i in range(m)]
    )
    expected = sum(1 for i in range(m) if i % 3 != 2)
    scheduler = PlacementScheduler(hub, namespaces=[ns], registry=CollectorRegistry())
    await scheduler.start()
    await scheduler.wait_synced()
    started = time.perf_counter()
    await kube.apply(
        hub,
        PLACEMENTS,
        {
            "metadata": {"name": "eu", "namespace": ns},
            "spec": {
                "clusterSelector": {"matchLabels": {"env": "prod"}},
                "propertySelector": {
                    "matchExpressions": [
                        {"key": "region", "operator": "In", "values": ["eu-west-1", "eu-central-1"]}
                    ]
                },
            },
        },
        field_manager="bench",
    )
    async with asyncio.timeout(300):
        while True:
            decision = await read_decisions(hub, ns, "eu")
            if decision.complete and len(decision.clusters) == expected:
                break
            await asyncio.sleep(0.02)
    to_decisions = time.perf_counter() - started
    async with asyncio.timeout(60):  # the status follows the decisions
        while ((await kube.get(hub, PLACEMENTS, "eu", ns)).get("status") or {}).get(
            "numberOfSelectedClusters"
        ) != expected:
            await asyncio.sleep(0.02)
    first_writes = scheduler.writes
    await scheduler.stop()

    rerun = PlacementScheduler(hub, namespaces=[ns], registry=CollectorRegistry())
    started = time.perf_counter()
    await rerun.start()
    async with asyncio.timeout(120):
        while rerun.reconciles < 1:
            await asyncio.sleep(0.01)
    rerun_seconds = time.perf_counter() - started
    await rerun.stop()
    slices = len(decision.slices)
    require(slices == -(-expected // 100), f"{slices} slices for {expected} clusters")
    require(rerun.writes == 0, f"the unchanged re-run wrote {rerun.writes} times")
    require_times(to_decisions=to_decisions, rerun=rerun_seconds)
    return {
        "m": m,
        "chosen": expected,
        "slices": slices,
        "to_decisions": to_decisions,
        "first_writes": first_writes,
        "rerun": rerun_seconds,
        "rerun_writes": rerun.writes,
    }


async def main(n: int, m: int, kubectl_clusters: int) -> None:
    async with Fleet(members=2) as fleet, await fleet.hub.client() as hub:
        with tempfile.TemporaryDirectory() as tmp:
            a = await bench_apply(fleet, hub, n, kubectl_clusters, Path(tmp))
        p = await bench_placement(hub, m)
    print(f"apply of a 20-object set to {a['n']} member profiles (2 shared members):")
    print(f"  cluster-inventory apply, cold (creates):      {a['cold']:7.2f} s")
    print(f"  cluster-inventory apply, warm (all unchanged): {a['warm']:7.2f} s")
    print(f"  the same, every apply sent (--no-skip-unchanged): {a['every']:4.2f} s")
    measured = a["kubectl_measured"]
    note = "" if measured == a["n"] else f" (extrapolated from {measured} clusters)"
    print(f"  kubectl apply --server-side, one cluster:      {a['kubectl_one']:7.2f} s (mean)")
    print(f"  kubectl loop over {a['n']} clusters:               {a['kubectl_loop']:7.2f} s{note}")
    print(f"  ratio warm / kubectl loop:                     {a['warm'] / a['kubectl_loop']:7.3f}")
    print(f"  ratio warm / one kubectl apply:                {a['warm'] / a['kubectl_one']:7.2f}")
    print(f"  ratio cold / one kubectl apply:                {a['cold'] / a['kubectl_one']:7.2f}")
    print(f"  ratio every-apply warm / one kubectl apply:    {a['every'] / a['kubectl_one']:7.2f}")
    print(f"placement over {p['m']} profiles ({p['chosen']} chosen, {p['slices']} slices):")
    print(f"  Placement created -> decisions complete:       {p['to_decisions']:7.2f} s")
    print(f"  writes of the first run:                       {p['first_writes']:7d}")
    print(f"  fresh scheduler, unchanged world: reconciled in {p['rerun']:6.2f} s")
    print(f"  writes of the unchanged re-run:                {p['rerun_writes']:7d}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=100)
    parser.add_argument("--placement-profiles", type=int, default=1000)
    parser.add_argument("--kubectl-clusters", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.profiles, args.placement_profiles, args.kubectl_clusters = 4, 60, 2
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(
        main(args.profiles, args.placement_profiles, args.kubectl_clusters or args.profiles)
    )
