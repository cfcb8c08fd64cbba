"""The network fault matrix (issue 32): each pair of our process and a server, each fault.

A cell puts a Toxiproxy (:mod:`tests.support.network.toxiproxy`) between one of our processes and one
server of the session fleet, brings the pair to a steady state, breaks the path with a fault
while something changes on the far side, heals the path, and measures:

- **up**: the process did not end and printed no traceback;
- **said**: what it said while the fault lasted (warnings and errors of the
  ``cluster_inventory`` loggers, condition messages, ``apply`` rows) and whether that names
  the server;
- **recovered in s**: from the heal until the change made during the fault shows (the
  process's own backoff decides this; it is measured, never asserted);
- **lost**: objects present before that are gone after, or the change made during the
  fault never showing;
- **written twice**: objects deleted and created again (uid changed), and writes that
  changed nothing (an update whose object equals the previous one but for its
  resourceVersion), both seen by a watch on a direct connection.

:data:`TALLY` collects every cell run; ``pytest --fault-report`` prints it as the matrix
(``bench/fault_campaign.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.kube.informer import Informer
from cluster_inventory.runtime import EngagedCluster, Request
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.inventory import Inventory
from tests.support.hub.manager import Harness, running_manager
from tests.support.network.toxiproxy import Fault, Front, Toxiproxy
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

#: How long a change made during a fault may take to show after the heal before it counts
#: as lost (a bound on a wait, not an assertion on time).
RECOVERY_BOUND = 90.0
#: Seconds one request of the fault window's own traffic (:class:`_Traffic`) is given. A
#: blackholing fault (half-open, the bandwidth limit) that nobody notices lasts 8 of them
#: plus their 0.2 s pauses: 5.6 s (it was 9.6 s with 1 s requests, about half of the
#: matrix's time). No process on these paths has a timeout between the two (watches time
#: out after minutes, a dropped connection is seen at once), so what they say is the same.
TICK_TIMEOUT = 0.5
#: The manager-member pair's tick: its half-open verdict needs 3 probe timeouts in a row
#: (``BUSY_VERDICT_AFTER``, 2 s each here), about 6.5 s, which a 5.6 s window would cut off.
PROBE_TICK_TIMEOUT = 1.0


@dataclass
class Cell:
    """One run of one pair under one fault."""

    pair: str
    fault: str
    up: bool = True
    noticed: bool = False
    recovered_s: float | None = None
    lost: list[str] = field(default_factory=list)
    written_twice: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    names_server: bool = False

    def row(self) -> list[str]:
        recovered = "-" if self.recovered_s is None else f"{self.recovered_s:.1f}"
        first = self.said[0] if self.said else ""
        return [
            self.pair,
            self.fault,
            "yes" if self.up else "NO",
            recovered,
            str(len(self.lost)),
            str(len(self.written_twice)),
            f"{len(self.said)}{' (names it)' if self.names_server else ''}",
            first[:90] + ("..." if len(first) > 90 else ""),
        ]


@dataclass
class Tally:
    cells: list[Cell] = field(default_factory=list)

    def table(self) -> str:
        from cluster_inventory.cli._table import format_table

        headers = ["pair", "fault", "up", "recovered s", "lost", "twice", "said", "first said"]
        said = [f"  {c.pair} {c.fault}: {line[:240]}" for c in self.cells for line in c.said]
        said += [
            f"  {c.pair} {c.fault}: LOST OR WRITTEN TWICE: {what}"
            for c in self.cells
            for what in c.lost + c.written_twice
        ]
        return format_table(headers, [c.row() for c in self.cells]) + (
            "\nwhat was said:\n" + "\n".join(said) if said else ""
        )


TALLY = Tally()


# -- what a process said ----------------------------------------------------------------


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self.tracebacks = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.exc_info:
            self.tracebacks += 1


@contextlib.contextmanager
def said() -> Iterator[_Said]:
    """Warnings and errors of our loggers while the block runs."""
    handler = _Said()
    logger = logging.getLogger("cluster_inventory")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def distinct(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


# -- what was written -------------------------------------------------------------------


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("resourceVersion", "managedFields")
    }
    return {**obj, "metadata": meta}


class Writes:
    """A watch on a direct connection that records creations, deletions and no-op writes."""

    def __init__(
        self, client: kube.ApiClient, resource: kube.Resource, namespace: str | None, prefix: str
    ) -> None:
        self.what = resource.kind
        self.prefix = prefix
        self.informer = Informer(client, resource, namespace=namespace, name=f"faults {resource}")
        self.noops: list[str] = []
        self.uids: dict[str, str] = {}
        self.recreated: list[str] = []
        self.informer.add_handler(self._seen)

    def _seen(self, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj.get("metadata") or {}
        if not str(meta.get("name")).startswith(self.prefix):
            return  # another test's object (a cluster-scoped kind)
        name = f"{self.what}/{meta.get('name')}"
        if kind == "MODIFIED" and old is not None and _content(obj) == _content(old):
            self.noops.append(name)
        uid = meta.get("uid")
        if kind in ("ADDED", "MODIFIED"):
            if self.uids.get(name) not in (None, uid):
                self.recreated.append(name)
            self.uids[name] = uid

    def snapshot(self) -> dict[str, str]:
        return dict(self.uids)


@contextlib.asynccontextmanager
async def watching(
    client: kube.ApiClient, namespace: str | None, *resources: kube.Resource, prefix: str = ""
) -> AsyncIterator[list[Writes]]:
    """Watches of ``resources`` in ``namespace`` (None: cluster-scoped, names ``prefix``...)."""
    logs = [Writes(client, r, namespace, prefix) for r in resources]
    for w in logs:
        w.informer.start()
    try:
        for w in logs:
            await w.informer.wait_synced()
        yield logs
    finally:
        for w in logs:
            await w.informer.stop()


def account(cell: Cell, logs: list[Writes], before: dict[str, str]) -> None:
    """Lost (gone or replaced since ``before``) and written twice, from the watches."""
    after: dict[str, str] = {}
    for w in logs:
        after.update(w.snapshot())
        cell.written_twice += [f"no-op write of {n}" for n in w.noops]
        cell.written_twice += [f"{n} created again" for n in w.recreated]
    cell.lost += [n for n, uid in before.items() if after.get(n) != uid]


# -- the fault window -------------------------------------------------------------------


async def fault_window(
    noticed: Callable[[], Awaitable[bool]], ticks: Callable[[], float], *, limit: int = 8
) -> bool:
    """Keep the fault on until the process noticed it or did ``ticks`` more of its work.

    Args:
        noticed: True once the process reacted (a condition flipped, a warning).
        ticks: A counter of requests of our own through the faulty path (the process's
            requests take the same path meanwhile); a fault nobody notices lasts ``limit``
            of them.
        limit: How many.

    Returns:
        Whether the process noticed.
    """
    start = ticks()

    async def until() -> bool:
        return await noticed() or ticks() >= start + limit

    await eventually(until, timeout=RECOVERY_BOUND, what="the fault to bite or be absorbed")
    return await noticed()


async def recover(cell: Cell, front: Front, shows: Callable[[], Awaitable[bool]]) -> None:
    """Heal the path and time how long until ``shows`` (the change made meanwhile)."""
    await front.heal()
    healed = time.monotonic()
    try:
        await eventually(shows, timeout=RECOVERY_BOUND, what="recovery")
    except AssertionError:
        cell.lost.append("the change made during the fault never showed")
        return
    cell.recovered_s = time.monotonic() - healed


def _port(server: str) -> str:
    return server.rsplit(":", 1)[1]


def _names(lines: list[str], *servers: str) -> bool:
    return any(any(s in line for s in servers) for line in lines)


# -- the pairs ---------------------------------------------------------------------------


async def _condition(h: Harness, ns: str, name: str, ctype: str) -> dict[str, Any] | None:
    try:
        return await h.condition(ns, name, ctype)
    except kube.NotFoundError:
        return None


async def _healthy(h: Harness, ns: str, name: str) -> bool:
    cond = await _condition(h, ns, name, "ControlPlaneHealthy")
    return cond is not None and cond["status"] == "True"


async def manager_member(fleet: Fleet, namespace: str, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The cluster manager reaching a member (probes, property watch, token minting)."""
    cell = Cell("manager-member", fault.name)
    member = next(iter(fleet.members.values()))
    front = await toxiproxy.front(member.server, "member")
    config = member.kubeconfig()
    config["clusters"][0]["cluster"]["server"] = front.server
    prop = f"fault.{namespace}.example.com"
    try:
        async with (
            running_manager(fleet, namespace) as h,
            await member.client() as direct,
        ):
            inv = await h.inventory("faults", "faults")
            await h.register("m1", member, ["faults"], kubeconfig=yaml.safe_dump(config))
            await eventually(lambda: _healthy(h, inv, "m1"), timeout=60, what="steady")
            conditions: list[str] = []

            async def noticed() -> bool:
                cond = await _condition(h, inv, "m1", "ControlPlaneHealthy")
                if cond is not None and cond["status"] != "True":
                    conditions.append(f"{cond['reason']}: {cond['message']}")
                    return True
                return False

            through = dataclasses.replace(member.connection(), server=front.server)
            async with (
                watching(h.hub_client, inv, kube.CLUSTER_PROFILES, kube.SECRETS) as logs,
                await kube.new_client(through) as probe,
            ):
                before = {k: v for w in logs for k, v in w.snapshot().items()}
                with said() as heard, _Traffic(probe, PROBE_TICK_TIMEOUT) as traffic:
                    await front.inject(fault)
                    # Half-open: the verdict needs three probe timeouts in a row, and a
                    # manager that is behind (a busy machine) defers a timed-out probe
                    # rather than blame the member; it must be noticed, so it may take
                    # longer (the window ends as soon as it is).
                    limit = 16 if fault.name == "half-open" else 8
                    cell.noticed = await fault_window(noticed, lambda: traffic.done, limit=limit)
                    await kube.apply(
                        direct,
                        kube.CLUSTER_PROPERTIES,
                        {"metadata": {"name": prop}, "spec": {"value": "set-during-fault"}},
                        field_manager="test",
                    )

                    async def shows() -> bool:
                        profile = await h.profile(inv, "m1")
                        props = {
                            p["name"]: p["value"]
                            for p in (profile.get("status") or {}).get("properties") or ()
                        }
                        return props.get(prop) == "set-during-fault" and await _healthy(
                            h, inv, "m1"
                        )

                    await recover(cell, front, shows)
                cell.up = h.task is not None and not h.task.done() and heard.tracebacks == 0
                cell.said = distinct(conditions) + distinct(heard.lines)
                cell.names_server = _names(cell.said, member.server, _port(front.server), "m1")
                account(cell, logs, before)
            await kube.delete(direct, kube.CLUSTER_PROPERTIES, prop)
    finally:
        await toxiproxy.remove(front)
    return cell


async def manager_hub(fleet: Fleet, namespace: str, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The cluster manager reaching the hub (watches, status and token Secret writes)."""
    cell = Cell("manager-hub", fault.name)
    member = next(iter(fleet.members.values()))
    front = await toxiproxy.front(fleet.hub.server, "hub")
    connection = dataclasses.replace(fleet.hub.connection(), server=front.server)
    try:
        async with (
            await kube.new_client(connection) as through,
            running_manager(fleet, namespace, manager_hub=through) as h,
        ):
            inv = await h.inventory("faults", "faults")
            await h.register("m1", member, ["faults"])
            await eventually(lambda: _healthy(h, inv, "m1"), timeout=60, what="steady")
            async with (
                watching(h.hub_client, inv, kube.CLUSTER_PROFILES, kube.SECRETS) as logs,
                await kube.new_client(connection) as probe,
            ):
                before = {k: v for w in logs for k, v in w.snapshot().items()}
                with said() as heard, _Traffic(probe) as traffic:
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines)

                    cell.noticed = await fault_window(noticed, lambda: traffic.done)
                    # A change the manager must see (another member: one member, one profile).
                    await h.register("m2", h.member(1), ["faults"])
                    await recover(cell, front, lambda: _healthy(h, inv, "m2"))
                cell.up = h.task is not None and not h.task.done() and heard.tracebacks == 0
                cell.said = distinct(heard.lines)
                cell.names_server = _names(cell.said, _port(front.server), "hub")
                account(cell, logs, before)
    finally:
        await toxiproxy.remove(front)
    return cell


async def _publish_through(inventory: Inventory, name: str, member: ControlPlane, server: str):
    await inventory.publish(name, member)
    profile = await kube.get(inventory.hub, kube.CLUSTER_PROFILES, name, inventory.namespace)
    providers = profile["status"]["accessProviders"]
    providers[0]["cluster"]["server"] = server
    await inventory.patch_status(name, {"accessProviders": providers})


class _Traffic:
    """Requests of our own through the path, one after the other: the runtime's ticks."""

    def __init__(self, client: kube.ApiClient, timeout: float = TICK_TIMEOUT) -> None:
        self.client = client
        self.timeout = timeout
        self.done = 0
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(kube.KubeError):
                await kube.request(self.client, "GET", "/version", timeout=self.timeout)
            self.done += 1
            await asyncio.sleep(0.2)

    def __enter__(self) -> _Traffic:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_: object) -> None:
        assert self.task is not None
        self.task.cancel()


async def runtime_member(
    inventory: Inventory,
    fleet_manager: Callable[..., Any],
    toxiproxy: Toxiproxy,
    fault: Fault,
) -> Cell:
    """The runtime reaching a member (its informers and a reconciler writing ConfigMaps)."""
    cell = Cell("runtime-member", fault.name)
    ns, member = inventory.namespace, inventory.member(0)
    front = await toxiproxy.front(member.server, "member")
    fm = fleet_manager()

    @fm.reconciler("v1/ServiceAccount", namespace=ns)
    async def mirror(request: Request, cluster: EngagedCluster) -> None:
        try:
            sa = await kube.get(cluster.client, kube.SERVICE_ACCOUNTS, request.name, ns)
        except kube.NotFoundError:
            return
        await kube.apply(
            cluster.client,
            kube.CONFIG_MAPS,
            {
                "metadata": {"name": f"{request.name}-seen", "namespace": ns},
                "data": {"uid": sa["metadata"]["uid"]},
            },
            field_manager="fault-test",
        )

    async def seen(client: kube.ApiClient, name: str) -> bool:
        try:
            await kube.get(client, kube.CONFIG_MAPS, f"{name}-seen", ns)
        except kube.NotFoundError:
            return False
        return True

    try:
        async with await member.client() as direct:
            await kube.create(
                direct, kube.SERVICE_ACCOUNTS, {"metadata": {"name": "a", "namespace": ns}}
            )
            await fm.start()
            await _publish_through(inventory, "c1", member, front.server)
            await eventually(lambda: seen(direct, "a"), timeout=60, what="steady")
            through = dataclasses.replace(member.connection(), server=front.server)
            async with (
                watching(direct, ns, kube.CONFIG_MAPS) as logs,
                await kube.new_client(through) as probe,
            ):
                before = logs[0].snapshot()
                with said() as heard, _Traffic(probe) as traffic:
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines)

                    cell.noticed = await fault_window(noticed, lambda: traffic.done)
                    await kube.create(
                        direct, kube.SERVICE_ACCOUNTS, {"metadata": {"name": "b", "namespace": ns}}
                    )
                    await recover(cell, front, lambda: seen(direct, "b"))
                cell.up = f"{ns}/c1" in fm.clusters and heard.tracebacks == 0
                cell.said = distinct(heard.lines)
                cell.names_server = _names(cell.said, _port(front.server), f"{ns}/c1")
                account(cell, logs, before)
    finally:
        await fm.stop()
        await toxiproxy.remove(front)
    return cell


async def apply_member(
    inventory: Inventory, tmp_path: Path, toxiproxy: Toxiproxy, fault: Fault
) -> Cell:
    """``cluster-inventory apply`` reaching a member through its profile."""
    cell = Cell("apply-member", fault.name)
    ns, member = inventory.namespace, inventory.member(0)
    front = await toxiproxy.front(member.server, "member")
    manifests = tmp_path / "manifests"
    manifests.mkdir()

    def write(version: str) -> None:
        for i in range(3):
            (manifests / f"cm{i}.yaml").write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"cm{i}"},
                        "data": {"version": version if i == 0 else "fixed"},
                    }
                )
            )

    def apply() -> Any:
        return cli(
            "apply", "-f", str(manifests), "--profile", "c1", "-n", ns, "--member-namespace", ns,
            "--provider-file", str(inventory.provider_file), "--timeout", "10",
            "--kubeconfig", str(inventory.fleet.hub.kubeconfig_path), timeout=120,
        )  # fmt: skip

    try:
        await _publish_through(inventory, "c1", member, front.server)
        write("1")
        first = await asyncio.to_thread(apply)
        assert first.returncode == 0, first.stdout + first.stderr
        async with await member.client() as direct, watching(direct, ns, kube.CONFIG_MAPS) as logs:
            before = logs[0].snapshot()
            await front.inject(fault)
            write("2")
            during = await asyncio.to_thread(apply)
            cell.noticed = during.returncode != 0
            cell.up = "Traceback" not in during.stderr
            # A run that succeeded said nothing about the fault (its summary is no message).
            rows = [line for line in during.stdout.splitlines() if "configmap/" in line]
            errors = [x for x in during.stderr.splitlines() if x.startswith(("error", "warn"))]
            cell.said = distinct(rows + errors) if during.returncode else []

            async def shows() -> bool:
                again = await asyncio.to_thread(apply)
                cell.up = cell.up and "Traceback" not in again.stderr
                if again.returncode != 0:
                    return False
                cm = await kube.get(direct, kube.CONFIG_MAPS, "cm0", ns)
                return cm["data"]["version"] == "2"

            await recover(cell, front, shows)
            cell.names_server = _names(cell.said, _port(front.server), f"{ns}/c1")
            account(cell, logs, before)
    finally:
        await toxiproxy.remove(front)
    return cell


async def runtime_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The runtime reaching the hub (its ClusterProfile watch, engagement of new members)."""
    from cluster_inventory.runtime import EngagementPolicy, FleetManager

    cell = Cell("runtime-hub", fault.name)
    ns = inventory.namespace
    first, second = inventory.member(0), inventory.member(1)
    front = await toxiproxy.front(inventory.fleet.hub.server, "hub")
    hub = inventory.fleet.hub
    fm: FleetManager | None = None
    try:
        async with (
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as through,
            await first.client() as direct_first,
            await second.client() as direct_second,
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as probe,
        ):
            fm = FleetManager(
                through,
                inventory.provider_file,
                namespaces=[ns],
                registry=CollectorRegistry(),
                policy=EngagementPolicy(readiness_recheck=0.5),
                provider_file_poll=0.2,
                graceful_shutdown=5.0,
            )

            @fm.reconciler("v1/ServiceAccount", namespace=ns)
            async def mirror(request: Request, cluster: EngagedCluster) -> None:
                with contextlib.suppress(kube.NotFoundError):
                    sa = await kube.get(cluster.client, kube.SERVICE_ACCOUNTS, request.name, ns)
                    await kube.apply(
                        cluster.client,
                        kube.CONFIG_MAPS,
                        {
                            "metadata": {"name": f"{request.name}-seen", "namespace": ns},
                            "data": {"uid": sa["metadata"]["uid"]},
                        },
                        field_manager="fault-test",
                    )

            async def seen(client: kube.ApiClient, name: str) -> bool:
                try:
                    await kube.get(client, kube.CONFIG_MAPS, f"{name}-seen", ns)
                except kube.NotFoundError:
                    return False
                return True

            for client, name in ((direct_first, "a"), (direct_second, "b")):
                await kube.create(
                    client, kube.SERVICE_ACCOUNTS, {"metadata": {"name": name, "namespace": ns}}
                )
            await fm.start()
            await inventory.publish("c1", first)
            await eventually(lambda: seen(direct_first, "a"), timeout=60, what="steady")
            async with (
                watching(direct_first, ns, kube.CONFIG_MAPS) as logs,
            ):
                before = logs[0].snapshot()
                with said() as heard, _Traffic(probe) as traffic:
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines)

                    cell.noticed = await fault_window(noticed, lambda: traffic.done)
                    await inventory.publish("c2", second)  # a member to engage after the heal
                    await recover(cell, front, lambda: seen(direct_second, "b"))
                cell.up = f"{ns}/c1" in fm.clusters and heard.tracebacks == 0
                cell.said = distinct(heard.lines)
                cell.names_server = _names(cell.said, _port(front.server), "hub")
                account(cell, logs, before)
    finally:
        if fm is not None:
            await fm.stop()
        await toxiproxy.remove(front)
    return cell


async def plugin_hub(
    inventory: Inventory, tmp_path: Path, toxiproxy: Toxiproxy, fault: Fault
) -> Cell:
    """The secretreader exec plugin reading a member's token Secret on the hub."""
    import json
    import os
    import subprocess

    from cluster_inventory.api.constants import REQUEST_TIMEOUT_ENV
    from tests.support.data.provider_files import PLUGIN

    cell = Cell("plugin-hub", fault.name)
    ns = inventory.namespace
    front = await toxiproxy.front(inventory.fleet.hub.server, "hub")
    config = yaml.safe_load(inventory.fleet.hub.kubeconfig_path.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = front.server
    kubeconfig = tmp_path / "hub.yaml"
    kubeconfig.write_text(yaml.safe_dump(config))
    info = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"cluster": {"server": "https://m", "config": {"clusterName": "c1"}}},
    }

    def plugin() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PLUGIN), "--namespace", ns],
            capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
            env={
                **os.environ, "KUBECONFIG": str(kubeconfig),
                "KUBERNETES_EXEC_INFO": json.dumps(info),
                "CLUSTER_INVENTORY_CACHE_DIR": str(tmp_path / "cache"),
                # A silent hub is given up on after 5 s, not the default 30 s.
                REQUEST_TIMEOUT_ENV: "5",
            },
        )  # fmt: skip

    try:
        await inventory.publish("c1", inventory.member(0))
        ok = await asyncio.to_thread(plugin)
        assert ok.returncode == 0, ok.stderr
        async with watching(inventory.hub, ns, kube.SECRETS) as logs:
            before = logs[0].snapshot()
            await front.inject(fault)
            during = await asyncio.to_thread(plugin)
            cell.noticed = during.returncode != 0
            cell.up = "Traceback" not in during.stderr
            cell.said = distinct(during.stderr.splitlines()) if during.returncode else []

            async def shows() -> bool:
                again = await asyncio.to_thread(plugin)
                cell.up = cell.up and "Traceback" not in again.stderr
                return again.returncode == 0 and '"token"' in again.stdout

            await recover(cell, front, shows)
            cell.names_server = _names(cell.said, _port(front.server), "hub")
            account(cell, logs, before)
    finally:
        await toxiproxy.remove(front)
    return cell


async def dashboard_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The dashboard reading the hub (its informers); the page must show what changed."""
    import aiohttp

    from cluster_inventory.dashboard import Dashboard, HubState

    cell = Cell("dashboard-hub", fault.name)
    ns = inventory.namespace
    hub = inventory.fleet.hub
    front = await toxiproxy.front(hub.server, "hub")
    try:
        async with (
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as through,
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as probe,
            aiohttp.ClientSession() as http,
        ):
            await inventory.publish("c1", inventory.member(0))
            dashboard = Dashboard(HubState(through, [ns]), address=("127.0.0.1", 0))
            async with dashboard.serve() as url:

                async def shows(name: str) -> bool:
                    async with http.get(url + "content") as answer:
                        return answer.status == 200 and f"{ns}/{name}" in await answer.text()

                await eventually(lambda: shows("c1"), timeout=60, what="steady")
                async with watching(inventory.hub, ns, kube.CLUSTER_PROFILES) as logs:
                    before = logs[0].snapshot()
                    with said() as heard, _Traffic(probe) as traffic:
                        await front.inject(fault)

                        async def noticed() -> bool:
                            return bool(heard.lines)

                        cell.noticed = await fault_window(noticed, lambda: traffic.done)
                        await inventory.publish("c2", inventory.member(1))
                        await recover(cell, front, lambda: shows("c2"))
                    async with http.get(url + "healthz") as alive:
                        cell.up = alive.status == 200 and heard.tracebacks == 0
                    cell.said = distinct(heard.lines)
                    cell.names_server = _names(cell.said, _port(front.server), "hub")
                    account(cell, logs, before)
    finally:
        await toxiproxy.remove(front)
    return cell


async def argocd_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The Argo CD sync reading profiles and writing cluster Secrets on the hub."""
    from cluster_inventory.credentials import load_provider_file
    from cluster_inventory.integrations.sync.argocd import ArgoCDSync

    cell = Cell("argocd-hub", fault.name)
    ns = inventory.namespace
    hub = inventory.fleet.hub
    argo = await inventory.namespace_for("argocd")
    front = await toxiproxy.front(hub.server, "hub")
    sync: ArgoCDSync | None = None

    async def has(name: str) -> bool:
        try:
            await kube.get(inventory.hub, kube.SECRETS, f"cluster-{ns}-{name}", argo)
        except kube.NotFoundError:
            return False
        return True

    try:
        async with (
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as through,
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as probe,
        ):
            await inventory.publish("c1", inventory.member(0), member_id="m-1")
            sync = ArgoCDSync(
                through,
                load_provider_file(inventory.provider_file),
                namespaces=[ns],
                argocd_namespace=argo,
                registry=CollectorRegistry(),
                identity="test",
            )
            await sync.start()
            await eventually(lambda: has("c1"), timeout=60, what="steady")
            async with watching(inventory.hub, argo, kube.SECRETS) as logs:
                before = logs[0].snapshot()
                with said() as heard, _Traffic(probe) as traffic:
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines)

                    cell.noticed = await fault_window(noticed, lambda: traffic.done)
                    await inventory.publish("c2", inventory.member(1), member_id="m-2")
                    await recover(cell, front, lambda: has("c2"))
                cell.up = heard.tracebacks == 0 and await has("c1")
                cell.said = distinct(heard.lines)
                cell.names_server = _names(cell.said, _port(front.server), "hub")
                account(cell, logs, before)
    finally:
        if sync is not None:
            await sync.stop()
        await toxiproxy.remove(front)
    return cell


async def multikueue_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: Fault) -> Cell:
    """The MultiKueue sync reading profiles and writing MultiKueueClusters on the hub."""
    from cluster_inventory.integrations.sync.multikueue import MULTIKUEUE_CLUSTERS, MultiKueueSync
    from cluster_inventory_workshop.upstream_crds import kueue_crds

    cell = Cell("multikueue-hub", fault.name)
    ns = inventory.namespace
    hub = inventory.fleet.hub
    await kube.ensure_crds(inventory.hub, await asyncio.to_thread(kueue_crds))
    front = await toxiproxy.front(hub.server, "hub")
    sync: MultiKueueSync | None = None
    first, second = f"{ns}-c1", f"{ns}-c2"

    async def has(name: str) -> bool:
        try:
            await kube.get(inventory.hub, MULTIKUEUE_CLUSTERS, name)
        except kube.NotFoundError:
            return False
        return True

    try:
        async with (
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as through,
            await kube.new_client(
                dataclasses.replace(hub.connection(), server=front.server)
            ) as probe,
        ):
            await inventory.publish(first, inventory.member(0))
            sync = MultiKueueSync(
                through, kueue_namespace=ns, registry=CollectorRegistry(), identity="test"
            )
            await sync.start()
            await eventually(lambda: has(first), timeout=60, what="steady")
            async with watching(inventory.hub, None, MULTIKUEUE_CLUSTERS, prefix=ns) as logs:
                before = logs[0].snapshot()
                with said() as heard, _Traffic(probe) as traffic:
                    await front.inject(fault)

                    async def noticed() -> bool:
                        return bool(heard.lines)

                    cell.noticed = await fault_window(noticed, lambda: traffic.done)
                    await inventory.publish(second, inventory.member(1))
                    await recover(cell, front, lambda: has(second))
                cell.up = heard.tracebacks == 0 and await has(first)
                cell.said = distinct(heard.lines)
                cell.names_server = _names(cell.said, _port(front.server), "hub")
                account(cell, logs, before)
    finally:
        if sync is not None:
            await sync.stop()
        await toxiproxy.remove(front)
        for name in (first, second):
            await kube.delete(inventory.hub, MULTIKUEUE_CLUSTERS, name)
    return cell
