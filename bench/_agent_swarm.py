"""Many simulated agent members in one process, for ``fleet_scale.py --mode agents``.

Run by ``bench/_agents.py`` as a child process, so that its CPU and memory are measured
apart from the hub's, the cluster manager's and the benchmark's. Each simulated agent has

- its own **hub identity**: a client certificate for ``cluster-inventory:agent:NAME`` in
  ``cluster-inventory:agents``, minted by the benchmark from the test hub's client CA
  (``ControlPlane.connection(user, groups)``). A real agent gets it by a CSR round trip (the
  join, ``docs/agent.md``); that is setup, not what this benchmark measures;
- its own **hub client** (its own aiohttp session and TLS context), with the real agent's
  keep-alive (``agent.HUB_KEEPALIVE_SECONDS``, 85 s: a 60 s Lease's renewals reuse one TLS
  connection), so the hub sees one write per member per lease duration;
- its own **Lease**, renewed by the real :class:`cluster_inventory.agent.Heartbeat`
  (``keep``: every duration x (1 +/- 0.25), a JSON merge patch), on this process's one event
  loop and the agent's one client (a real agent renews on a loop and connection of its own);
- its own **MemberReport**, written by the real :meth:`MemberReporter.flush` (server-side
  apply of ``status``, only when it changed), after :data:`COALESCE` seconds as the
  reporter's write loop does.

There is **no member cluster per agent**: the member half of the reporter (its
ClusterProperty informer and ``/readyz`` probe) is not run. What the agent knows of its
member (member id, version, health, properties) is set here, and a property change ordered
by the benchmark goes the way an informer event goes: the reporter's view changes, and
:data:`COALESCE` seconds later its status is flushed.

Protocol: ``argv[1]`` is a JSON spec (``server``, ``ca``, ``namespace``, ``lease``,
``concurrency``, ``agents``: ``[{name, cert, key}]``, the PEMs as text; the file is deleted
once read). Once every agent renewed its Lease and wrote its first report, one JSON line
``{"ready": ...}`` goes to stdout; then each stdin line is a command, answered by one line:
``{"op": "change", "name", "prop", "value"}``, ``{"op": "kill", "names"}`` (the agents stop
at once, like a SIGKILL: no more renewals or reports), ``{"op": "stats"}``,
``{"op": "stop"}`` (or end of input).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import logging
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from _common import bounded, rss_mib

from cluster_inventory import kube
from cluster_inventory.agent import (
    HUB_KEEPALIVE_SECONDS,
    Heartbeat,
    MemberNotAcceptedError,
    MemberReporter,
)
from cluster_inventory.agent.report import MemberView, ObservedValue, advertised
from cluster_inventory.agent.reporter import COALESCE
from cluster_inventory.kube.probes import readyz_condition

#: The property every agent reports from the start (profiles at full status have one).
BASE_PROPERTY = "region.example.com"
VERSION = "v1.36.3"


class SimulatedAgent:
    """One agent member: its hub client, heartbeat and reporter, and an in-process member."""

    def __init__(self, spec: dict[str, Any], hub: kube.ApiClient, common: dict[str, Any]) -> None:
        self.name = str(spec["name"])
        self.hub = hub
        ns = str(common["namespace"])
        self.heartbeat = Heartbeat(hub, name=self.name, namespace=ns, duration=common["lease"])
        # The member client is never used: start() (the member's informer and probe) is not
        # called, the view is set below instead.
        self.reporter = MemberReporter(
            hub,
            hub,
            name=self.name,
            namespace=ns,
            access=advertised(
                f"https://{self.name}.members.example.test:6443", common["ca"].encode(), None
            ),
        )
        now = dt.datetime.now(dt.UTC)
        self.reporter.view = MemberView(
            member_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{ns}.{self.name}")),
            version=VERSION,
            health=readyz_condition(200, "readyz check passed"),
            probed=now,
            properties={BASE_PROPERTY: ObservedValue("eu", now)},
        )
        self.dirty = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.write_failures = 0

    async def start(self) -> None:
        """As ``ReportingAgent.prepare``: renew the Lease once, write the first report."""
        await self.heartbeat.renew()
        await self.reporter.flush()
        self.tasks = [
            asyncio.create_task(self.heartbeat.keep(), name=f"heartbeat {self.name}"),
            asyncio.create_task(self._write_loop(), name=f"report {self.name}"),
        ]

    def change(self, prop: str, value: str) -> None:
        """The member's ClusterProperty ``prop`` now reads ``value`` (an informer event)."""
        view = self.reporter.view
        observed = dict(view.properties or {})
        observed[prop] = ObservedValue(value, dt.datetime.now(dt.UTC))
        self.reporter.view = dataclasses.replace(view, properties=observed)
        self.dirty.set()

    async def _write_loop(self) -> None:
        backoff = 0.5
        while True:
            await self.dirty.wait()
            await asyncio.sleep(COALESCE)
            self.dirty.clear()
            try:
                await self.reporter.flush()
            except kube.KubeError as exc:
                self.write_failures += 1
                logging.warning("agent %s: report not written: %s", self.name, exc)
                self.dirty.set()
                await asyncio.sleep(backoff)
                backoff = min(2 * backoff, 10.0)
                continue
            backoff = 0.5

    async def kill(self) -> None:
        """Stop renewing and reporting at once, and drop the connection."""
        tasks, self.tasks = self.tasks, []
        await kube.cancel_and_wait(*tasks)
        await self.hub.close()


async def serve(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text())
    spec_path.unlink()
    started = time.perf_counter()
    common = {k: spec[k] for k in ("namespace", "lease", "ca", "server")}
    agents: dict[str, SimulatedAgent] = {}
    retries: list[str] = []  # why a start was tried again (the hub's status code)

    async def one(item: dict[str, Any]) -> None:
        conn = kube.ClusterConnection(
            server=common["server"],
            ca_data=common["ca"].encode(),
            client_cert_data=item["cert"].encode(),
            client_key_data=item["key"].encode(),
            name=item["name"],
        )
        agent = SimulatedAgent(
            item, await kube.new_client(conn, keepalive_timeout=HUB_KEEPALIVE_SECONDS), common
        )
        backoff = 0.5
        while True:  # as a restarted agent pod would, with backoff
            try:
                await agent.start()
                break
            except MemberNotAcceptedError:
                raise
            except kube.KubeError as exc:
                retries.append(str(exc.status if isinstance(exc, kube.KubeAPIError) else exc))
                await asyncio.sleep(backoff)
                backoff = min(2 * backoff, 10.0)
        agents[agent.name] = agent

    items, concurrency = spec.pop("agents"), int(spec.get("concurrency", 32))
    await bounded([one(item) for item in items], concurrency)
    del items
    out = sys.stdout

    def say(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    say(
        {
            "ready": time.perf_counter() - started,
            "agents": len(agents),
            "rss_mib": rss_mib(os.getpid()),
            "start_retries": dict(Counter(retries)),
        }
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    killed: set[str] = set()
    try:
        while line := await reader.readline():
            cmd = json.loads(line)
            op = cmd["op"]
            if op == "change":
                agents[cmd["name"]].change(cmd["prop"], cmd["value"])
                say({"changed": cmd["name"]})
            elif op == "kill":
                await asyncio.gather(*(agents[n].kill() for n in cmd["names"]))
                killed.update(cmd["names"])
                say({"killed": len(cmd["names"])})
            elif op == "stats":
                live = [a for n, a in agents.items() if n not in killed]
                say(
                    {
                        "renewals": sum(a.heartbeat.renewals for a in agents.values()),
                        "writes": sum(a.reporter.writes for a in agents.values()),
                        "write_failures": sum(a.write_failures for a in agents.values()),
                        "ended": sum(1 for a in live if any(t.done() for t in a.tasks)),
                        "rss_mib": rss_mib(os.getpid()),
                        "open_fds": len(os.listdir(f"/proc/{os.getpid()}/fd")),
                    }
                )
            elif op == "stop":
                break
    finally:
        for name, agent in agents.items():
            if name not in killed:
                with contextlib.suppress(Exception):
                    await agent.kill()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(Path(sys.argv[1])))
