"""``cluster-inventory demo``: the whole Cluster Inventory API on a local fleet of real clusters.

What an operator and a consumer do with the API, in order, on one hub and a few member
clusters (real etcd and kube-apiserver processes on loopback, from
:mod:`cluster_inventory.testing`):

1. start the hub and the members;
2. make two inventories on the hub (namespaces labelled with a cluster set) and register every
   member into one or both cluster sets;
3. publish ClusterProperty objects (region, account id) on every member;
4. run the cluster manager (``cluster-inventory manager run``, a separate process) and wait
   until every ClusterProfile reports a healthy control plane, its version, its properties and
   an access provider;
5. run the runtime example (:class:`~cluster_inventory.integrations.configmap_sync.ConfigMapSync`)
   as a consumer: it copies a hub ConfigMap to every member of the first inventory;
6. act as that consumer, a hub ServiceAccount whose Role covers only its own inventory
   namespace: load a provider file, reach each member through ``cluster-inventory-secretreader``
   (KEP-5339), list what is there, and be refused the other inventory;
7. as the platform team, place the first inventory's clusters of one region (a ``Placement``
   and the placement scheduler writing PlacementDecisions); as the consumer, apply a small
   manifest set to that placement (``cluster-inventory apply --placement``'s code);
8. keep Argo CD cluster Secrets and Kueue MultiKueueClusters from the first inventory's
   profiles (:mod:`~cluster_inventory.integrations.argocd`,
   :mod:`~cluster_inventory.integrations.multikueue`; the first inventory stands in for
   Kueue's namespace), then take one member out of that inventory and watch both go, and
   come back when it returns;
9. stop one member's API server, watch ``ControlPlaneHealthy`` turn False, start it again and
   watch it recover.

Tables go to stdout, progress to stderr. A step that fails ends the demo with
:class:`DemoError` naming the step; everything started is stopped unless ``keep`` is set.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import typer
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from cluster_inventory import api, kube
from cluster_inventory.cli._files import console_script, write_private
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.profiles import (
    access_provider_names,
    condition,
    properties_text,
)
from cluster_inventory.testing import DEFAULT_CONTROLLERS, Fleet, ManagedProcess

__all__ = [
    "CONSUMER",
    "INVENTORIES",
    "PROPERTY_ACCOUNT_ID",
    "PROPERTY_REGION",
    "Demo",
    "DemoError",
    "DemoInventory",
    "DemoMember",
    "demo_members",
]

#: ClusterProperty names published on every member (KEP-2149 objects in ``about.k8s.io``;
#: short names keep the demo's table narrow, a real fleet would use domain-qualified ones).
PROPERTY_REGION = "region"
PROPERTY_ACCOUNT_ID = "account-id"
#: The consumer: a hub ServiceAccount in the first inventory namespace.
CONSUMER = "demo-consumer"
#: The hub ConfigMap the runtime example copies to ``default`` on each member.
SYNCED_CONFIGMAP = "fleet-settings"
_MANAGER_NAMESPACE = "cluster-inventory-system"
_FIELD_MANAGER = "cluster-inventory-demo"
_T = TypeVar("_T")
_REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "eu-central-1", "us-west-2")


@dataclass(frozen=True)
class DemoInventory:
    """An inventory namespace of the demo and the member ClusterRole its consumers get."""

    namespace: str
    clusterset: str
    member_role: str


#: team-a may write on members (the runtime example writes ConfigMaps); team-b only reads.
INVENTORIES = (
    DemoInventory("team-a", "prod", "edit"),
    DemoInventory("team-b", "staging", "view"),
)


@dataclass(frozen=True)
class DemoMember:
    """A member cluster of the demo: its cluster sets and the properties it publishes."""

    name: str
    clustersets: tuple[str, ...]
    region: str
    account_id: str


def demo_members(count: int) -> list[DemoMember]:
    """``count`` members: member1 in prod, member2 in prod and staging, member3 in staging, ...

    Raises:
        ValueError: ``count`` is below 1.
    """
    if count < 1:
        raise ValueError(f"members: {count} is below 1")
    sets = (("prod",), ("prod", "staging"), ("staging",))
    return [
        DemoMember(
            name=f"member{i}",
            clustersets=sets[(i - 1) % 3],
            region=_REGIONS[(i - 1) % len(_REGIONS)],
            account_id=str(i) * 12,
        )
        for i in range(1, count + 1)
    ]


class DemoError(Exception):
    """A demo step failed.

    Attributes:
        step: The step, as shown in the progress display.
        problem: What went wrong (never a credential).
    """

    def __init__(self, step: str, problem: str) -> None:
        super().__init__(f"demo failed while {step}: {problem}")
        self.step = step
        self.problem = problem


class _Display:
    """Progress on stderr: a rich display on a terminal, plain lines elsewhere (CI, pipes)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        if console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(finished_text="[green]✓"),
                TextColumn("{task.description}"),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            )

    def __enter__(self) -> _Display:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def begin(self, title: str, total: int | None) -> TaskID | None:
        if self.progress is not None:
            return self.progress.add_task(title, total=total)
        self.console.print(f"==> {title}", highlight=False)
        return None

    def advance(self, task: TaskID | None, completed: int, note: str) -> None:
        if self.progress is not None and task is not None:
            self.progress.update(task, completed=completed)
        else:
            self.console.print(f"    {note}", highlight=False)

    def end(self, task: TaskID | None, title: str, seconds: float) -> None:
        if self.progress is not None and task is not None:
            total = self.progress.tasks[task].total
            self.progress.update(task, total=total or 1, completed=total or 1)
            self.progress.update(task, description=f"{title} ({seconds:.1f} s)")
        else:
            self.console.print(f"    done in {seconds:.1f} s", highlight=False)


@dataclass
class _Outcome:
    """What the demo saw, for the summary."""

    profiles: list[dict[str, Any]] = field(default_factory=list)
    ready_after: float = 0.0
    reached: list[str] = field(default_factory=list)
    refused: str = ""
    down_after: float = 0.0
    up_after: float = 0.0
    served: tuple[int, int] = (0, 0)


class Demo:
    """One run of the demo.

    Args:
        members: Number of member clusters (at least 1).
        keep: Leave the fleet and the manager running afterwards, in ``workdir``.
        workdir: Where everything lives (a temp dir, removed at the end, if None).
        out: Where tables go (stdout).
        err: Where progress goes (stderr).
        ready_timeout: Seconds to wait for each condition (profiles ready, a flip).
    """

    def __init__(
        self,
        members: int = 3,
        *,
        keep: bool = False,
        workdir: Path | None = None,
        out: Callable[[str], None] = lambda text: typer.echo(text, nl=False),
        err: Console | None = None,
        ready_timeout: float = 300.0,
    ) -> None:
        self.members = demo_members(members)
        self.keep = keep
        self.out = out
        self.err = err or Console(stderr=True)
        self.ready_timeout = ready_timeout
        self.fleet = Fleet(
            [m.name for m in self.members],
            workdir=workdir,
            hub_controllers=DEFAULT_CONTROLLERS,
            member_controllers=DEFAULT_CONTROLLERS,
            detach=keep,
        )
        self.manager: ManagedProcess | None = None
        self.outcome = _Outcome()
        self._display = _Display(self.err)

    # -- the plan ---------------------------------------------------------------------
    def expected_profiles(self) -> list[tuple[str, str]]:
        """``(inventory namespace, member)`` of every profile the manager should make."""
        return [
            (inv.namespace, m.name)
            for inv in INVENTORIES
            for m in self.members
            if inv.clusterset in m.clustersets
        ]

    @property
    def outage_member(self) -> str:
        """The member whose API server the demo stops (the last one)."""
        return self.members[-1].name

    # -- steps ------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _step(self, title: str, total: int | None = None) -> AsyncIterator[TaskID | None]:
        started = time.monotonic()
        task = self._display.begin(title, total)
        try:
            yield task
        except DemoError:
            raise
        except (Exception, asyncio.CancelledError) as exc:
            raise DemoError(title, _explain(exc)) from exc
        self._display.end(task, title, time.monotonic() - started)

    async def run(self) -> None:
        """Run every step; stop what was started unless ``keep``.

        Raises:
            DemoError: A step failed (the message names it); everything is stopped first,
                even with ``keep``.
        """
        ok = False
        try:
            with self._display:
                await self._run_steps()
            ok = True
        finally:
            if not (ok and self.keep):
                await self.stop()

    async def stop(self) -> None:
        """Stop the manager and the fleet (idempotent)."""
        await self.fleet.stop()

    async def _run_steps(self) -> None:
        n = len(self.members)
        async with self._step(f"starting a hub and {n} member cluster{'s' * (n > 1)}"):
            await self.fleet.start()
        async with await self.fleet.hub.client() as hub:
            inventories = ", ".join(f"{i.namespace} ({i.clusterset})" for i in INVENTORIES)
            async with self._step(f"creating inventories {inventories} on the hub"):
                await self._create_inventories(hub)
            async with self._step(f"registering {n} members with the hub"):
                await self._register(hub)
            async with self._step("publishing ClusterProperty objects on the members"):
                await self._publish_properties()
            async with self._step("starting the cluster manager"):
                self._start_manager()
            expected = self.expected_profiles()
            started = time.monotonic()
            async with self._step("waiting for every ClusterProfile", total=len(expected)) as t:
                profiles = await self._wait_ready(hub, expected, t)
            self.outcome.profiles = profiles
            self.outcome.ready_after = time.monotonic() - started
            self.out("\nCLUSTER PROFILES (hub)\n" + profile_table(profiles))
            first = INVENTORIES[0].namespace
            async with self._step(f"setting up the consumer {first}/{CONSUMER}"):
                kubeconfig, providers = await self._consumer(hub, first)
            async with await kube.new_client(kube.connection_from_kubeconfig(kubeconfig)) as me:
                await self._consume(hub, me, first, providers)
                await self._place_and_apply(hub, me, first, providers)
            await self._consumers_served(hub, first, providers)
            await self._outage(hub)
        self.out("\n" + self.summary() + "\n")
        if self.keep:
            self.out(self.next_steps())

    async def _create_inventories(self, hub: kube.ApiClient) -> None:
        manager_namespace = {"metadata": {"name": _MANAGER_NAMESPACE}}
        await kube.apply(hub, kube.NAMESPACES, manager_namespace, field_manager=_FIELD_MANAGER)
        for inv in INVENTORIES:
            body = {
                "metadata": {
                    "name": inv.namespace,
                    "labels": {api.LABEL_CLUSTER_SET: inv.clusterset},
                    "annotations": {"cluster-inventory.dev/member-cluster-role": inv.member_role},
                }
            }
            await kube.apply(hub, kube.NAMESPACES, body, field_manager=_FIELD_MANAGER)

    async def _register(self, hub: kube.ApiClient) -> None:
        for member in self.members:
            await self._register_one(hub, member, list(member.clustersets))

    async def _publish_properties(self) -> None:
        for member in self.members:
            async with await self.fleet.member(member.name).client() as client:
                for name, value in (
                    (PROPERTY_REGION, member.region),
                    (PROPERTY_ACCOUNT_ID, member.account_id),
                ):
                    body = {"metadata": {"name": name}, "spec": {"value": value}}
                    await kube.apply(
                        client, kube.CLUSTER_PROPERTIES, body, field_manager=_FIELD_MANAGER
                    )

    def _start_manager(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "cluster_inventory.cli",
            "manager",
            "run",
            f"--kubeconfig={self.fleet.hub.kubeconfig_path}",
            f"--namespace={_MANAGER_NAMESPACE}",
            "--probe-interval=1",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ]
        self.manager = ManagedProcess(
            "cluster-manager", argv, self.fleet.workdir / "manager.log", detach=self.keep
        )
        self.manager.start()
        self.fleet.adopt(self.manager)

    def _check_manager(self) -> None:
        if self.manager is not None and not self.manager.running:
            raise RuntimeError(
                "the cluster manager exited; the end of its log:\n" + self.manager.log_tail()
            )

    async def _wait_ready(
        self, hub: kube.ApiClient, expected: list[tuple[str, str]], task: TaskID | None
    ) -> list[dict[str, Any]]:
        last_count = -1
        last_problem = "no profile yet"

        async def ready() -> list[dict[str, Any]] | None:
            nonlocal last_count, last_problem
            self._check_manager()
            found = {}
            for inv in INVENTORIES:
                listed = await kube.list_objects(hub, kube.CLUSTER_PROFILES, inv.namespace)
                secrets = await kube.list_objects(hub, kube.SECRETS, inv.namespace)
                tokens = {s["metadata"]["name"] for s in secrets["items"]}
                for item in listed["items"]:
                    found[(inv.namespace, item["metadata"]["name"])] = (item, tokens)
            problems = []
            for key in expected:
                entry = found.get(key)
                problem = "not created" if entry is None else _not_ready(*entry)
                if problem:
                    problems.append(f"{key[0]}/{key[1]}: {problem}")
            done = len(expected) - len(problems)
            if done != last_count:
                last_count = done
                self._display.advance(task, done, f"{done}/{len(expected)} profiles ready")
            if problems:
                last_problem = problems[0]
                return None
            return [found[key][0] for key in expected]

        return await _poll(ready, self.ready_timeout, lambda: last_problem)

    async def _consumer(self, hub: kube.ApiClient, namespace: str) -> tuple[Path, Path]:
        rules = [
            {  # consumers read PlacementDecisions, never write them (KEP-5313)
                "apiGroups": [api.GROUP],
                "resources": ["clusterprofiles", "placementdecisions"],
                "verbs": ["get", "list", "watch"],
            },
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        ]
        meta = {"name": CONSUMER, "namespace": namespace}
        await kube.apply(
            hub, kube.SERVICE_ACCOUNTS, {"metadata": meta}, field_manager=_FIELD_MANAGER
        )
        await kube.apply(
            hub, kube.ROLES, {"metadata": meta, "rules": rules}, field_manager=_FIELD_MANAGER
        )
        binding = {
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CONSUMER},
            "subjects": [{"kind": "ServiceAccount", "name": CONSUMER, "namespace": namespace}],
        }
        await kube.apply(hub, kube.ROLE_BINDINGS, binding, field_manager=_FIELD_MANAGER)
        token = await kube.request_service_account_token(hub, namespace, CONSUMER)
        home = self.fleet.workdir / "consumer"
        home.mkdir(parents=True, exist_ok=True)
        config = self.fleet.hub.kubeconfig(CONSUMER, token=token.token)
        config["contexts"][0]["context"]["namespace"] = namespace
        kubeconfig = home / "kubeconfig"
        write_private(kubeconfig, yaml.safe_dump(config, sort_keys=False))
        providers = home / "providers.json"
        exec_config = {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": console_script("cluster-inventory-secretreader"),
            "args": ["--kubeconfig", str(kubeconfig), "--namespace", namespace],
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }
        document = {"providers": [{"name": "secretreader", "execConfig": exec_config}]}
        providers.write_text(json.dumps(document, indent=2) + "\n")
        return kubeconfig, providers

    async def _consume(
        self, hub: kube.ApiClient, me: kube.ApiClient, namespace: str, providers: Path
    ) -> None:
        from cluster_inventory import credentials
        from cluster_inventory.integrations.configmap_sync import ConfigMapSync
        from cluster_inventory.runtime import FleetManager

        data = {"color": "blue", "owner": "platform-team"}
        runtime: FleetManager | None = None
        body = {"metadata": {"name": SYNCED_CONFIGMAP, "namespace": namespace}, "data": data}
        async with self._step(f"syncing ConfigMap {namespace}/{SYNCED_CONFIGMAP} with the runtime"):
            await kube.apply(hub, kube.CONFIG_MAPS, body, field_manager=_FIELD_MANAGER)
            runtime = FleetManager(me, str(providers), namespaces=[namespace], name="demo")
            ConfigMapSync(runtime, namespace, SYNCED_CONFIGMAP, "default")
            await runtime.start()
            await runtime.wait_synced()
        try:
            rows: list[list[str]] = []
            title = f"reaching each member as {namespace}/{CONSUMER} through the secretreader"
            async with self._step(title):
                config = credentials.load_provider_file(providers)
                listed = await kube.list_objects(me, kube.CLUSTER_PROFILES, namespace)
                for profile in listed["items"]:
                    name = profile["metadata"]["name"]
                    async with await credentials.connect(profile, config) as member:
                        copy = await _poll(
                            functools.partial(_configmap, member),
                            self.ready_timeout,
                            functools.partial(_not_copied, name),
                        )
                        spaces = await kube.list_objects(member, kube.NAMESPACES)
                    names = ",".join(n["metadata"]["name"] for n in spaces["items"])
                    shown = ",".join(f"{k}={v}" for k, v in sorted(copy.items()))
                    rows.append([f"{namespace}/{name}", names, shown])
                    self.outcome.reached.append(name)
                for other in INVENTORIES:
                    if other.namespace == namespace:
                        continue
                    try:
                        await kube.list_objects(me, kube.CLUSTER_PROFILES, other.namespace)
                    except kube.ForbiddenError:
                        self.outcome.refused = other.namespace
                    else:
                        raise RuntimeError(
                            f"{namespace}/{CONSUMER} could list profiles in {other.namespace}; "
                            "its Role should cover only its own inventory"
                        )
        finally:
            if runtime is not None:
                await runtime.stop()
        self.out(
            f"\nCONSUMER {namespace}/{CONSUMER} (provider file {providers.name}, plugin "
            f"cluster-inventory-secretreader; ConfigMap default/{SYNCED_CONFIGMAP})\n"
            + format_table(("PROFILE", "NAMESPACES ON THE MEMBER", "SYNCED CONFIGMAP"), rows)
        )
        if self.outcome.refused:
            self.out(
                f"{namespace}/{CONSUMER} listing profiles in {self.outcome.refused}: "
                "forbidden, as its Role intends\n"
            )

    async def _place_and_apply(
        self, hub: kube.ApiClient, me: kube.ApiClient, namespace: str, providers: Path
    ) -> None:
        from cluster_inventory.integrations import delivery
        from cluster_inventory.integrations.placement import (
            PLACEMENTS,
            PlacementScheduler,
            read_decisions,
        )

        region = self.members[0].region
        name = f"{namespace}-{region}"
        body = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"propertySelector": {"matchProperties": {PROPERTY_REGION: region}}},
        }

        async def decided() -> dict[str, Any] | None:
            found = await read_decisions(hub, namespace, name)
            if not found.complete:
                return None
            placed = await kube.get(hub, PLACEMENTS, name, namespace)
            status = placed.get("status") or {}
            return placed if status.get("observedGeneration") else None

        async with self._step(f"placing {namespace}'s clusters in {region} (PlacementDecision)"):
            async with PlacementScheduler(hub, namespaces=[namespace], name="demo") as scheduler:
                await scheduler.wait_synced()
                await kube.apply(hub, PLACEMENTS, body, field_manager=_FIELD_MANAGER)
                placed = await _poll(decided, self.ready_timeout, lambda: "no decision yet")
            decision = await read_decisions(me, namespace, name)  # as a consumer reads it
        status = placed["status"]
        left = "; ".join(
            f"{e['reason']}: {','.join(e.get('clusters') or ())}"
            for e in status.get("excluded") or ()
        )
        self.out(
            f"\nPLACEMENT {namespace}/{name} ({PROPERTY_REGION}={region}; "
            f"{status.get('numberOfSelectedClusters')} chosen in "
            f"{len(decision.slices)} PlacementDecision slice(s))\n"
            + format_table(
                ("CLUSTER", "DECISION SLICE"),
                [(cluster, ",".join(decision.slices)) for cluster in decision.clusters],
            )
            + (f"left out: {left}\n" if left else "")
        )
        manifests = [
            delivery.Manifest(obj=obj, source=f"demo#{i}")
            for i, obj in enumerate(
                (
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "web-settings", "namespace": "default"},
                        "data": {"region": region, "replicas": "2"},
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "ServiceAccount",
                        "metadata": {"name": "web", "namespace": "default"},
                    },
                ),
                start=1,
            )
        ]
        title = f"applying {len(manifests)} objects to placement {namespace}/{name}"
        async with self._step(title):
            targets = await delivery.select_profiles(me, namespace, placement=name)
            rows = await delivery.deliver(targets, manifests, providers, timeout=60)
            failed = [r for r in rows if r.failed]
            if failed:
                raise RuntimeError(f"{failed[0].cluster} {failed[0].object}: {failed[0].message}")
        self.out(
            f"\nAPPLY --placement {name} as {namespace}/{CONSUMER} (server-side apply)\n"
            + format_table(
                ("CLUSTER", "NAMESPACE", "OBJECT", "RESULT"),
                [(r.cluster, r.namespace, r.object, r.action) for r in rows],
            )
        )

    async def _consumers_served(self, hub: kube.ApiClient, namespace: str, providers: Path) -> None:
        from cluster_inventory.credentials import load_provider_file
        from cluster_inventory.integrations.argocd import ArgoCDSync
        from cluster_inventory.integrations.multikueue import MULTIKUEUE_CLUSTERS, MultiKueueSync
        from cluster_inventory.testing.upstream_crds import kueue_crds

        argo_ns = "argocd"
        members = [m for m in self.members if INVENTORIES[0].clusterset in m.clustersets]
        leaving = members[0]

        async def table(expected: set[str]) -> list[list[str]] | None:
            secrets = await kube.list_objects(
                hub, kube.SECRETS, argo_ns, label_selector="argocd.argoproj.io/secret-type=cluster"
            )
            by_profile = {
                (s["metadata"].get("annotations") or {}).get(
                    "cluster-inventory.dev/cluster-profile", ""
                ): s
                for s in secrets["items"]
            }
            mkcs = {
                m["metadata"]["name"]: m
                for m in (await kube.list_objects(hub, MULTIKUEUE_CLUSTERS))["items"]
            }
            shown = {key.partition("/")[2] for key in by_profile if key.startswith(namespace)}
            if shown != expected or not expected <= mkcs.keys() or mkcs.keys() - expected:
                return None
            rows = []
            for name in sorted(expected):
                secret = by_profile[f"{namespace}/{name}"]
                data = {
                    k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()
                }
                command = json.loads(data["config"])["execProviderConfig"]["command"]
                mkc = mkcs[name]["spec"]["clusterSource"]["clusterProfileRef"]["name"]
                rows.append(
                    [
                        f"{namespace}/{name}",
                        secret["metadata"]["name"],
                        data["server"],
                        Path(command).name,
                        f"{name} -> profile {mkc}",
                    ]
                )
            return rows

        headers = (
            "PROFILE",
            "ARGO CD SECRET",
            "SERVER",
            "EXEC PLUGIN",
            "MULTIKUEUECLUSTER",
        )
        everyone = {m.name for m in members}
        async with self._step("installing Kueue's MultiKueue CRDs (sigs.k8s.io/kueue module)"):
            await kube.ensure_crds(hub, await asyncio.to_thread(kueue_crds))
            await kube.apply(
                hub, kube.NAMESPACES, {"metadata": {"name": argo_ns}}, field_manager=_FIELD_MANAGER
            )
        argo = ArgoCDSync(
            hub, load_provider_file(providers), namespaces=[namespace], argocd_namespace=argo_ns
        )
        kueue = MultiKueueSync(hub, kueue_namespace=namespace, config_name=namespace)
        async with argo, kueue:
            title = f"keeping Argo CD Secrets and MultiKueueClusters for {namespace}'s profiles"
            async with self._step(title):
                rows = await _poll(
                    functools.partial(table, everyone), self.ready_timeout, lambda: "not all yet"
                )
            self.out(
                f"\nARGO CD AND MULTIKUEUE ({namespace}'s profiles; Secrets in {argo_ns}, "
                "MultiKueueClusters cluster-scoped)\n" + format_table(headers, rows)
            )
            registration = functools.partial(self._register_one, hub, leaving)
            prod = INVENTORIES[0].clusterset
            title = f"taking {leaving.name} out of {namespace} (registration without {prod})"
            async with self._step(title):
                await registration(
                    [s for s in leaving.clustersets if s != INVENTORIES[0].clusterset] or ["none"]
                )
                rows = await _poll(
                    functools.partial(table, everyone - {leaving.name}),
                    self.ready_timeout,
                    lambda: f"{leaving.name}'s Secret or MultiKueueCluster still there",
                )
            self.out(f"\nafter {namespace}/{leaving.name} went:\n" + format_table(headers, rows))
            async with self._step(f"putting {leaving.name} back into {namespace}"):
                await registration(list(leaving.clustersets))
                await _poll(
                    functools.partial(table, everyone), self.ready_timeout, lambda: "not back yet"
                )
            self.outcome.served = (argo.writes, kueue.writes)

    async def _register_one(
        self, hub: kube.ApiClient, member: DemoMember, clustersets: list[str]
    ) -> None:
        from cluster_inventory.manager import registration_secret

        cp = self.fleet.member(member.name)
        secret = registration_secret(
            member.name, _MANAGER_NAMESPACE, cp.kubeconfig_path.read_text(), clustersets
        )
        await kube.apply(hub, kube.SECRETS, secret, field_manager=_FIELD_MANAGER)

    async def _outage(self, hub: kube.ApiClient) -> None:
        name = self.outage_member
        keys = [key for key in self.expected_profiles() if key[1] == name]
        where = ", ".join("/".join(k) for k in keys)
        self.out("\nOUTAGE\n")
        # kube-apiserver stops serving readiness as soon as it gets SIGTERM, then drains for a
        # while: the manager may see the outage before the process is gone. So each flip is
        # timed from the request, with the request and the wait running together.
        phases = (
            ("stopping", "stopped", self.fleet.stop_member, "False", "told to stop"),
            ("starting", "started", self.fleet.start_member, "True", "started"),
        )
        for doing, done, act, wanted, since in phases:
            async with self._step(f"{doing} {name}'s API server"):
                reason, seconds = await self._while(act(name), self._wait_health(hub, keys, wanted))
            if wanted == "False":
                self.outcome.down_after = seconds
            else:
                self.outcome.up_after = seconds
            self.out(
                f"{name} {done}: ControlPlaneHealthy={wanted} ({reason}) on {where} "
                f"{seconds:.1f} s after its API server was {since}\n"
            )

    @staticmethod
    async def _while(action: Awaitable[None], wait: Awaitable[_T]) -> _T:
        """Run ``action`` and ``wait`` together and return ``wait``'s result.

        Both must finish; if ``action`` fails first, ``wait`` is cancelled and the error
        raised at once rather than after ``wait`` times out.
        """
        acting = asyncio.ensure_future(action)
        waiting = asyncio.ensure_future(wait)
        try:
            await asyncio.wait({acting, waiting}, return_when=asyncio.FIRST_EXCEPTION)
            if acting.done() and acting.exception() is not None:
                waiting.cancel()
            await acting
            return await waiting
        finally:
            for task in (acting, waiting):
                task.cancel()

    async def _wait_health(
        self, hub: kube.ApiClient, keys: list[tuple[str, str]], wanted: str
    ) -> tuple[str, float]:
        """Wait until ``ControlPlaneHealthy`` is ``wanted`` on every profile of ``keys``.

        Returns:
            The reasons seen (comma-separated) and the seconds waited.
        """
        started = time.monotonic()
        seen = "not read yet"

        async def flipped() -> str | None:
            nonlocal seen
            self._check_manager()
            reasons = set()
            for namespace, name in keys:
                profile = await kube.get(hub, kube.CLUSTER_PROFILES, name, namespace=namespace)
                cond = condition(profile, api.CONDITION_CONTROL_PLANE_HEALTHY) or {}
                seen = f"{namespace}/{name}: ControlPlaneHealthy={cond.get('status', 'absent')}"
                if cond.get("status") != wanted:
                    return None
                reasons.add(str(cond.get("reason", "")))
            return ",".join(sorted(reasons))

        reason = await _poll(flipped, self.ready_timeout, lambda: seen)
        return reason, time.monotonic() - started

    # -- reporting --------------------------------------------------------------------
    def summary(self) -> str:
        """One paragraph on what the run showed."""
        o = self.outcome
        healthy = sum(
            1
            for p in o.profiles
            if (condition(p, api.CONDITION_CONTROL_PLANE_HEALTHY) or {}).get("status") == "True"
        )
        lines = [
            f"summary: {len(self.members)} members, {len(INVENTORIES)} inventories, "
            f"{len(o.profiles)} ClusterProfiles ready {o.ready_after:.1f} s after the manager "
            f"started ({healthy} healthy, properties mirrored from ClusterProperty objects).",
            f"consumer {INVENTORIES[0].namespace}/{CONSUMER} reached {len(o.reached)} members "
            f"through the secretreader plugin"
            + (f" and was refused {o.refused}." if o.refused else "."),
            f"Argo CD and MultiKueue followed {INVENTORIES[0].namespace}'s profiles with "
            f"{o.served[0]} Secret and {o.served[1]} MultiKueue writes.",
            f"{self.outage_member}'s profiles turned unhealthy {o.down_after:.1f} s after its "
            f"API server was told to stop and healthy {o.up_after:.1f} s after it was started.",
        ]
        return "\n".join(lines)

    def next_steps(self) -> str:
        """Commands to explore a kept fleet."""
        from cluster_inventory.testing import find_binary

        hub = self.fleet.hub.kubeconfig_path
        kubectl = find_binary("kubectl")
        lines = ["", "The fleet and the cluster manager keep running:"]
        lines += [f"  {cp.name:<9} {cp.kubeconfig_path}" for cp in self.fleet.clusters]
        lines += [
            f"  consumer  {self.fleet.workdir / 'consumer' / 'kubeconfig'}",
            f"  manager log {self.fleet.workdir / 'manager.log'}",
            "Next:",
            f"  export KUBECONFIG={hub} PATH={kubectl.parent}:{Path(sys.executable).parent}:$PATH",
            "  kubectl inventory get -A -o wide",
            f"  kubectl inventory describe {self.members[0].name} -n {INVENTORIES[0].namespace}",
            f"  kubectl inventory kubeconfig {self.members[0].name} -n {INVENTORIES[0].namespace}"
            f" -o {self.members[0].name}.kubeconfig",
            f"  kubectl --kubeconfig {self.members[0].name}.kubeconfig get configmaps",
            "  cluster-inventory fleet down     # stops everything",
        ]
        return "\n".join(lines) + "\n"


def profile_table(profiles: list[dict[str, Any]]) -> str:
    """The demo's profile table: namespace, name, version, healthy, properties, provider."""
    rows = []
    for p in profiles:
        meta = p["metadata"]
        cond = condition(p, api.CONDITION_CONTROL_PLANE_HEALTHY) or {}
        rows.append(
            [
                meta["namespace"],
                meta["name"],
                str(((p.get("status") or {}).get("version") or {}).get("kubernetes", "")),
                str(cond.get("status", "")),
                properties_text(p),
                ",".join(access_provider_names(p)),
            ]
        )
    headers = ("NAMESPACE", "NAME", "VERSION", "HEALTHY", "PROPERTIES", "ACCESS PROVIDERS")
    return format_table(headers, rows)


def _not_ready(profile: dict[str, Any], tokens: set[str]) -> str:
    """Why a profile is not yet what the demo needs, or "" when it is."""
    status = profile.get("status") or {}
    for wanted in (api.CONDITION_CONTROL_PLANE_HEALTHY, api.CONDITION_JOINED):
        cond = condition(profile, wanted) or {}
        if cond.get("status") != "True":
            return f"{wanted} is {cond.get('status', 'not reported')}"
    if not (status.get("version") or {}).get("kubernetes"):
        return "no version yet"
    names = {p.get("name") for p in status.get("properties") or ()}
    if not {PROPERTY_REGION, PROPERTY_ACCOUNT_ID} <= names:
        return "properties not mirrored yet"
    if not access_provider_names(profile):
        return "no access provider yet"
    if profile["metadata"]["name"] not in tokens:
        return "no token Secret yet"
    return ""


def _not_copied(name: str) -> str:
    return f"{name}: the runtime has not copied the ConfigMap yet"


async def _configmap(member: kube.ApiClient) -> dict[str, str] | None:
    try:
        found = await kube.get(member, kube.CONFIG_MAPS, SYNCED_CONFIGMAP, namespace="default")
    except kube.NotFoundError:
        return None
    data: dict[str, str] = found.get("data") or {}
    return data


async def _poll(
    check: Callable[[], Awaitable[_T | None]], timeout: float, why: Callable[[], str]
) -> _T:
    """Call ``check`` every 0.5 s until it returns a value; TimeoutError naming ``why()``."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done after {timeout:.0f} s: {why()}")
        await asyncio.sleep(0.5)


def _explain(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError):
        return "interrupted"
    return str(exc) or type(exc).__name__
