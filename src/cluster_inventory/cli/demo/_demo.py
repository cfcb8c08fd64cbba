"""The demo's run: start the fleet, register, run the manager, then each step in turn."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import TaskID

from cluster_inventory import api, kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_DEMO
from cluster_inventory.api.views import ProfileView
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo._agent import agent_log, agent_member, join_by_agent
from cluster_inventory.cli.demo._consumer import consume, make_consumer
from cluster_inventory.cli.demo._display import Display
from cluster_inventory.cli.demo._integrations import consumers_served
from cluster_inventory.cli.demo._isolated import (
    IsolatedMember,
    reach_through_proxy,
    start_isolated,
)
from cluster_inventory.cli.demo._outage import outage
from cluster_inventory.cli.demo._placement import place_and_apply
from cluster_inventory.cli.demo._plan import (
    CONSUMER,
    INVENTORIES,
    MANAGER_NAMESPACE,
    PROPERTY_ACCOUNT_ID,
    PROPERTY_REGION,
    DemoError,
    DemoMember,
    Outcome,
    demo_members,
    explain,
    manifest,
    poll,
    register_one,
)
from cluster_inventory.cli.profiles import access_provider_names, properties_text
from cluster_inventory.testing import DEFAULT_CONTROLLERS, Fleet, ManagedProcess, netns_refused

__all__ = ["Demo", "profile_table"]


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
        #: The member that joins by its agent (pull mode), if there is one.
        self.agent_member = agent_member(self.members)
        #: Why the agent member does not run in its own network namespace ("" when it does).
        self.not_isolated = _why_not_isolated(keep) if self.agent_member is not None else ""
        isolated = self.agent_member if not self.not_isolated else None
        self.keep = keep
        self.out = out
        self.err = err or Console(stderr=True)
        self.ready_timeout = ready_timeout
        self.fleet = Fleet(
            [m.name for m in self.members if m is not isolated],
            workdir=workdir,
            hub_controllers=DEFAULT_CONTROLLERS,
            member_controllers=DEFAULT_CONTROLLERS,
            agent_join=True,
            detach=keep,
        )
        #: The agent member in its network namespace and the cluster proxy, once started.
        self.isolated: IsolatedMember | None = None
        self._isolation = contextlib.AsyncExitStack()
        self.agent: ManagedProcess | None = None
        self.manager: ManagedProcess | None = None
        self.outcome = Outcome()
        self._display = Display(self.err)

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
    async def step(self, title: str, total: int | None = None) -> AsyncIterator[TaskID | None]:
        """Show ``title`` while the block runs; a failure becomes a DemoError naming it."""
        started = time.monotonic()
        task = self._display.begin(title, total)
        try:
            yield task
        except DemoError:
            raise
        except (Exception, asyncio.CancelledError) as exc:
            raise DemoError(title, explain(exc)) from exc
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
        """Stop the isolated member, the proxy, the manager and the fleet (idempotent)."""
        try:
            await self._isolation.aclose()
        finally:
            await self.fleet.stop()

    async def _run_steps(self) -> None:
        n = len(self.fleet.members)
        async with self.step(f"starting a hub and {n} member cluster{'s' * (n > 1)}"):
            await self.fleet.start()
        if self.agent_member is not None and not self.not_isolated:
            name = self.agent_member.name
            title = f"starting {name} in its own network namespace, and the hub's cluster proxy"
            async with self.step(title):
                self.isolated = await start_isolated(
                    self, self._isolation, name, DEFAULT_CONTROLLERS
                )
        async with await self.fleet.hub.client() as hub:
            inventories = ", ".join(f"{i.namespace} ({i.clusterset})" for i in INVENTORIES)
            async with self.step(f"creating inventories {inventories} on the hub"):
                await self._create_inventories(hub)
            probed = [m for m in self.members if m is not self.agent_member]
            async with self.step(f"registering {len(probed)} members with the hub (push mode)"):
                await self._register(hub, probed)
            if self.agent_member is not None:
                name = self.agent_member.name
                async with self.step(f"joining {name} by its agent (pull mode)"):
                    self.agent = await join_by_agent(self, hub, self.agent_member, self.isolated)
            async with self.step("publishing ClusterProperty objects on the members"):
                await self._publish_properties()
            async with self.step("starting the cluster manager"):
                self._start_manager()
            expected = self.expected_profiles()
            started = time.monotonic()
            async with self.step("waiting for every ClusterProfile", total=len(expected)) as t:
                profiles = await self._wait_ready(hub, expected, t)
            self.outcome.profiles = profiles
            self.outcome.ready_after = time.monotonic() - started
            self.out("\nCLUSTER PROFILES (hub)\n" + profile_table(profiles))
            first = INVENTORIES[0].namespace
            async with self.step(f"setting up the consumer {first}/{CONSUMER}"):
                kubeconfig, providers = await make_consumer(self, hub, first)
            async with await kube.new_client(kube.connection_from_kubeconfig(kubeconfig)) as me:
                await consume(self, hub, me, first, providers)
                await place_and_apply(self, hub, me, first, providers)
            await consumers_served(self, hub, first, providers)
            if self.isolated is not None:
                await self._reach_isolated(hub, self.isolated)
            await outage(self, hub)
        self.out("\n" + self.summary() + "\n")
        if self.keep:
            self.out(self.next_steps())

    async def _reach_isolated(self, hub: kube.ApiClient, isolated: IsolatedMember) -> None:
        second = INVENTORIES[1].namespace
        async with self.step(f"setting up the consumer {second}/{CONSUMER}"):
            kubeconfig, providers = await make_consumer(self, hub, second)
        title = f"reaching {isolated.name} through the cluster proxy as {second}/{CONSUMER}"
        async with (
            self.step(title),
            await kube.new_client(kube.connection_from_kubeconfig(kubeconfig)) as me,
        ):
            await reach_through_proxy(self, me, second, providers, isolated)

    # -- members, where they run ------------------------------------------------------
    async def apply_on_member(self, name: str, manifests: list[dict[str, Any]]) -> None:
        """Apply ``manifests`` (full objects) on member ``name`` as its admin.

        The isolated member's admin applies them from inside its namespace.

        Raises:
            KubeAPIError, NetnsMemberError: A write was refused.
        """
        if self.isolated is not None and name == self.isolated.name:
            await self.isolated.ns.apply(manifests, FIELD_MANAGER_DEMO)
            return
        async with await self.fleet.member(name).client() as client:
            for body in manifests:
                resource = await kube.resolve_kind(client, f"{body['apiVersion']}/{body['kind']}")
                await kube.apply(client, resource, body, field_manager=FIELD_MANAGER_DEMO)

    async def stop_member(self, name: str) -> None:
        """Stop member ``name``'s API server, wherever it runs (its data stays)."""
        if self.isolated is not None and name == self.isolated.name:
            await self.isolated.ns.stop_apiserver()
        else:
            await self.fleet.stop_member(name)

    async def start_member(self, name: str) -> None:
        """Start member ``name``'s API server again on its address."""
        if self.isolated is not None and name == self.isolated.name:
            await self.isolated.ns.start_apiserver()
        else:
            await self.fleet.start_member(name)

    async def _create_inventories(self, hub: kube.ApiClient) -> None:
        manager_namespace = {"metadata": {"name": MANAGER_NAMESPACE}}
        await kube.apply(hub, kube.NAMESPACES, manager_namespace, field_manager=FIELD_MANAGER_DEMO)
        for inv in INVENTORIES:
            body = {
                "metadata": {
                    "name": inv.namespace,
                    "labels": {api.LABEL_CLUSTER_SET: inv.clusterset},
                    "annotations": {api.ANNOTATION_MEMBER_ROLE: inv.member_role},
                }
            }
            await kube.apply(hub, kube.NAMESPACES, body, field_manager=FIELD_MANAGER_DEMO)

    async def _register(self, hub: kube.ApiClient, members: list[DemoMember]) -> None:
        for member in members:
            await register_one(hub, self.fleet, member, list(member.clustersets))

    async def _publish_properties(self) -> None:
        for member in self.members:
            properties = [
                manifest(kube.CLUSTER_PROPERTIES, {"metadata": {"name": n}, "spec": {"value": v}})
                for n, v in (
                    (PROPERTY_REGION, member.region),
                    (PROPERTY_ACCOUNT_ID, member.account_id),
                )
            ]
            await self.apply_on_member(member.name, properties)

    def _start_manager(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "cluster_inventory.cli",
            "manager",
            "run",
            f"--kubeconfig={self.fleet.hub.kubeconfig_path}",
            f"--namespace={MANAGER_NAMESPACE}",
            "--probe-interval=1",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            # Each demo set allows the role its inventory asks for (docs/manager.md).
            *(f"--member-roles={inv.clusterset}={inv.member_role}" for inv in INVENTORIES),
        ]
        if self.isolated is not None:  # agent members with a tunnel are reached through it
            argv.append(f"--cluster-proxy-url={self.isolated.connect_url}")
        self.manager = ManagedProcess(
            "cluster-manager", argv, self.fleet.workdir / "manager.log", detach=self.keep
        )
        self.manager.start()
        self.fleet.adopt(self.manager)

    def check_manager(self) -> None:
        """Raise if the cluster manager (or the member agent) exited, with its log's end."""
        proxy = self.isolated.proxy if self.isolated is not None else None
        for what, process in (
            ("the cluster manager", self.manager),
            ("the agent", self.agent),
            ("the cluster proxy", proxy),
        ):
            if process is not None and not process.running:
                raise RuntimeError(f"{what} exited; the end of its log:\n" + process.log_tail())

    async def _wait_ready(
        self, hub: kube.ApiClient, expected: list[tuple[str, str]], task: TaskID | None
    ) -> list[dict[str, Any]]:
        last_count = -1
        last_problem = "no profile yet"

        async def ready() -> list[dict[str, Any]] | None:
            nonlocal last_count, last_problem
            self.check_manager()
            found = {}
            for inv in INVENTORIES:
                listed = await kube.list_objects(hub, kube.CLUSTER_PROFILES, inv.namespace)
                secrets = await kube.list_objects(hub, kube.SECRETS, inv.namespace)
                tokens = {str(objects.meta(s).get("name")) for s in secrets["items"]}
                for item in listed["items"]:
                    found[(inv.namespace, ProfileView.of(item).name)] = (item, tokens)
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

        return await poll(ready, self.ready_timeout, lambda: last_problem)

    # -- reporting --------------------------------------------------------------------
    def summary(self) -> str:
        """One paragraph on what the run showed."""
        o = self.outcome
        healthy = sum(1 for p in o.profiles if ProfileView.of(p).healthy)
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
        if self.agent_member is not None:
            name = self.agent_member.name
            where = (
                " It ran in its own network namespace, with no route from the hub or the "
                f"consumers; {o.through_proxy} reached it through the hub's cluster proxy, "
                "TLS end to end."
                if o.through_proxy
                else f" (It ran on the host's loopback: {self.not_isolated}.)"
            )
            lines.insert(
                1,
                f"{name} joined by its agent (pull mode: a CSR approved once accepted); its "
                "profile comes from the agent's report, the hub never dialled it." + where,
            )
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
            *(
                [f"  agent log {agent_log(self, self.agent_member)}"]
                if self.agent_member is not None
                else []
            ),
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


def _why_not_isolated(keep: bool) -> str:
    """Why the agent member cannot run in its own network namespace here, or ""."""
    if keep:
        return "--keep: a network namespace lives only as long as the demo's process"
    why = netns_refused()
    return f"no unprivileged network namespace here ({why})" if why else ""


def profile_table(profiles: list[dict[str, Any]]) -> str:
    """The demo's profile table: namespace, name, version, healthy, how it joined, ...

    JOINED is the ``Joined`` condition's reason: ``CredentialAccepted`` for a member the
    manager reaches with its kubeconfig, ``AgentReporting`` for one whose agent reports.
    """
    rows = []
    for p in map(ProfileView.of, profiles):
        joined = p.condition(api.CONDITION_JOINED)
        rows.append(
            [
                p.namespace,
                p.name,
                p.version,
                p.condition_status(api.CONDITION_CONTROL_PLANE_HEALTHY),
                joined.reason if joined is not None else "",
                properties_text(p),
                ",".join(access_provider_names(p)),
            ]
        )
    headers = (
        "NAMESPACE",
        "NAME",
        "VERSION",
        "HEALTHY",
        "JOINED",
        "PROPERTIES",
        "ACCESS PROVIDERS",
    )
    return format_table(headers, rows)


def _not_ready(profile: dict[str, Any], tokens: set[str]) -> str:
    """Why a profile is not yet what the demo needs, or "" when it is."""
    view = ProfileView.of(profile)
    for wanted in (api.CONDITION_CONTROL_PLANE_HEALTHY, api.CONDITION_JOINED):
        cond = view.condition(wanted)
        if cond is None or not cond.true:
            return f"{wanted} is {cond.status if cond else 'not reported'}"
    if not view.version:
        return "no version yet"
    if not {PROPERTY_REGION, PROPERTY_ACCOUNT_ID} <= view.properties.keys():
        return "properties not mirrored yet"
    if not view.access_providers:
        return "no access provider yet"
    if view.name not in tokens:
        return "no token Secret yet"
    return ""
