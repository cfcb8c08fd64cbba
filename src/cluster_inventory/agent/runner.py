"""The agent's reporting as one runnable: the reporter and the heartbeat of one member.

``cluster-inventory agent run`` adds a :class:`ReportingAgent` to a
:class:`~cluster_inventory.controller.Manager` (which opens the hub client from the agent's
hub identity and handles SIGTERM); it satisfies the Manager's ``Runnable`` protocol without
importing it, so this package stays below the controllers (``docs/agent.md``). An agent
that joins by itself (a :class:`~.join.HubIdentity`) first gets its identity, waiting while
the hub has not accepted the member, and keeps it fresh beside the reporter. Before it runs
it renews the Lease once: an agent whose member is not accepted stops at once with one line
saying so, before it writes anything.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from cluster_inventory import credentials, kube
from cluster_inventory.agent.heartbeat import DEFAULT_LEASE_DURATION, Heartbeat
from cluster_inventory.agent.join import HubIdentity
from cluster_inventory.agent.report import advertised
from cluster_inventory.agent.reporter import DEFAULT_PROBE_INTERVAL, MemberReporter
from cluster_inventory.api.agents import check_member_name

__all__ = ["ReportingAgent", "ReportingConfig"]


@dataclass(frozen=True, kw_only=True)
class ReportingConfig:
    """What the agent reports as, and how often (seconds).

    Attributes:
        name: The member's name (a DNS-1123 label): its Lease and MemberReport.
        namespace: The cluster manager's hub namespace.
        server: API server URL the member advertises to consumers (None: none).
        ca_pem: PEM CA bundle of that server (None: none).
        proxy_url: Proxy consumers must use to reach it (None: none).
        lease_duration: Heartbeat Lease duration, also the mean renewal interval.
        probe_interval: Seconds between probes of the member's ``/readyz``.
        probe_timeout: Seconds a probe may take.

    Raises:
        AgentNameError: The name or namespace is not a DNS-1123 label (a ``ValueError``).
        ValueError: Another field is invalid; the message names it.
    """

    name: str
    namespace: str
    server: str | None = None
    ca_pem: bytes | None = None
    proxy_url: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    probe_interval: float = DEFAULT_PROBE_INTERVAL
    probe_timeout: float = 10.0

    def __post_init__(self) -> None:
        for field, value in (("name", self.name), ("namespace", self.namespace)):
            check_member_name(value, source="agent", field=field)
        for field, seconds in (
            ("lease_duration", self.lease_duration),
            ("probe_interval", self.probe_interval),
            ("probe_timeout", self.probe_timeout),
        ):
            if not seconds > 0:
                raise ValueError(f"agent {field}: {seconds:g} s is not positive")
        if self.server is not None and not self.server.startswith("https://"):
            raise ValueError(f"agent server: {self.server!r} is not an https:// URL")


class ReportingAgent:
    """Reports one member to the hub: its MemberReport and its heartbeat Lease.

    Args:
        hub: Client of the hub (the agent's identity there; the caller closes it).
        member: How to reach the member the agent runs in (opened in :meth:`prepare`,
            closed in :meth:`stop`).
        config: Name, namespace, what to advertise, timings.
        background: The loop the heartbeat renews on (the process's Lease loop by default).
        identity: The agent's own hub identity when it joins by itself (``hub`` is then
            ``identity.client()``): joined in :meth:`prepare`, rotated while it runs. None:
            ``hub`` already holds a given identity.
    """

    #: Every agent runs: there is one per member, never a standby.
    needs_leader_election = False

    def __init__(
        self,
        hub: kube.ApiClient,
        member: kube.ClusterConnection,
        config: ReportingConfig,
        *,
        background: kube.BackgroundLoop | None = None,
        identity: HubIdentity | None = None,
    ) -> None:
        self.hub = hub
        self.identity = identity
        self.connection = member
        self.config = config
        self.heartbeat = Heartbeat(
            hub,
            name=config.name,
            namespace=config.namespace,
            duration=config.lease_duration,
            background=background,
        )
        self.reporter: MemberReporter | None = None
        self._member: kube.ApiClient | None = None

    async def prepare(self) -> None:
        """Join (with an identity to get), renew the Lease once, start the reporter.

        Raises:
            JoinError: The hub denied the agent's certificate (joining by itself).
            MemberNotAcceptedError: The member is not accepted on the hub.
            KubeError: The hub does not answer, or the member's kubeconfig does not load.
        """
        if self.reporter is not None:
            return
        if self.identity is not None:
            await self.identity.join()
        await self.heartbeat.renew()
        self._member = await credentials.hub_client(self.connection)
        cfg = self.config
        self.reporter = MemberReporter(
            self.hub,
            self._member,
            name=cfg.name,
            namespace=cfg.namespace,
            access=advertised(cfg.server, cfg.ca_pem, cfg.proxy_url),
            probe_interval=cfg.probe_interval,
            probe_timeout=cfg.probe_timeout,
        )
        await self.reporter.start()

    async def run(self) -> None:
        """Report, renew (and rotate) until cancelled (or until the member is rejected).

        Raises:
            MemberNotAcceptedError: The Lease or the MemberReport went away.
        """
        await self.prepare()
        assert self.reporter is not None
        tasks = [
            asyncio.ensure_future(self.reporter.run()),
            asyncio.ensure_future(self.heartbeat.run()),
        ]
        if self.identity is not None:
            tasks.append(asyncio.ensure_future(self.identity.keep_fresh()))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await kube.cancel_and_wait(*tasks)
        for task in done:
            task.result()

    def ready(self) -> bool:
        """Started, and the Lease renewed at least once."""
        return self.reporter is not None and self.heartbeat.renewals > 0

    async def stop(self) -> None:
        """Stop reporting and close the member client (idempotent)."""
        reporter, self.reporter = self.reporter, None
        if reporter is not None:
            await reporter.stop()
        member, self._member = self._member, None
        if member is not None:
            await member.close()
