"""The agent as one runnable: the reporter, the heartbeat (and the consumer token) of a member.

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
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from cluster_inventory import credentials, kube
from cluster_inventory.agent.credential import (
    DEFAULT_CONSUMER_TOKEN_LIFETIME,
    ConsumerCredential,
)
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
        consumer_service_account: The member ServiceAccount (namespace, name) whose token
            the agent keeps for consumers in its hub credential Secret; None: none kept.
        consumer_token_lifetime: ``expirationSeconds`` of that token (at least 600, the
            TokenRequest minimum).

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
    consumer_service_account: tuple[str, str] | None = None
    consumer_token_lifetime: int = DEFAULT_CONSUMER_TOKEN_LIFETIME

    def __post_init__(self) -> None:
        for field, value in (("name", self.name), ("namespace", self.namespace)):
            check_member_name(value, source="agent", field=field)
        if self.consumer_service_account is not None:
            namespace, account = self.consumer_service_account
            for field, value in (("namespace", namespace), ("name", account)):
                check_member_name(value, source="agent consumer_service_account", field=field)
        if self.consumer_token_lifetime < 600:
            raise ValueError(
                f"agent consumer_token_lifetime: {self.consumer_token_lifetime} s is under "
                "600 s (the TokenRequest minimum)"
            )
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
        now: Wall clock of the consumer token's rotation.
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
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.hub = hub
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
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
        #: Keeps the consumers' token on the hub (``config.consumer_service_account``).
        self.credential: ConsumerCredential | None = None
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
        if cfg.consumer_service_account is not None:
            self.credential = ConsumerCredential(
                self.hub,
                self._member,
                name=cfg.name,
                namespace=cfg.namespace,
                service_account=cfg.consumer_service_account,
                lifetime=cfg.consumer_token_lifetime,
                now=self._now,
            )
        await self.reporter.start()

    async def run(self) -> None:
        """Report, renew, rotate, keep the consumer token until cancelled (or rejected).

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
        if self.credential is not None:
            tasks.append(asyncio.ensure_future(self.credential.run()))
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
