"""The agent as one runnable: reporter, heartbeat (consumer token, proxy tunnels) of a member.

``cluster-inventory agent run`` adds a :class:`ReportingAgent` to a
:class:`~cluster_inventory.controller.Manager` (which opens the hub client from the agent's
hub identity and handles SIGTERM); it satisfies the Manager's ``Runnable`` protocol without
importing it, so this package stays below the controllers (``docs/agent.md``). An agent
that joins by itself (a :class:`~.join.HubIdentity`) first gets its identity, waiting until
the cluster manager approves its CSR, and keeps it fresh beside the reporter. Before it runs
it renews the Lease once and reads its MemberReport, each retried with backoff while the hub
does not answer or refuses without proof (a hub that is starting refuses too:
:mod:`.rejection`); an agent whose member is not accepted stops with one line saying so,
once the refusals are proven, before it writes anything else.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from cluster_inventory import credentials, kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.config import ReportingConfig
from cluster_inventory.agent.credential import ConsumerCredential
from cluster_inventory.agent.heartbeat import Heartbeat
from cluster_inventory.agent.join import HubIdentity
from cluster_inventory.agent.proxy_link import ProxyLink
from cluster_inventory.agent.rejection import RejectionCheck
from cluster_inventory.agent.report import advertised
from cluster_inventory.agent.reporter import MAX_BACKOFF, MemberReporter

__all__ = ["ReportingAgent", "ReportingConfig"]

_log = logging.getLogger("cluster_inventory.agent")


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
        hub_connection: The given identity's hub connection (its client certificate or
            token, presented to the cluster proxy; ``config.proxy_servers``). Unused with
            ``identity``.
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
        hub_connection: kube.ClusterConnection | None = None,
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.hub = hub
        self._now = now or utcnow
        self.identity = identity
        self.connection = member
        self.config = config
        #: Judges the hub's refusals (shared by the heartbeat, the reporter and the start).
        self.rejection = RejectionCheck(config.window)
        self.heartbeat = Heartbeat(
            hub,
            name=config.name,
            namespace=config.namespace,
            duration=config.lease_duration,
            background=background,
            rejection=self.rejection,
        )
        self.reporter: MemberReporter | None = None
        #: Keeps the consumers' token on the hub (``config.consumer_service_account``).
        self.credential: ConsumerCredential | None = None
        self._member: kube.ApiClient | None = None
        self._hub_connection = hub_connection
        #: The tunnels to the hub's cluster proxy (``config.proxy_servers``), or None.
        self.proxy_link: ProxyLink | None = None
        if config.proxy_servers:
            self.proxy_link = ProxyLink(
                config.name,
                config.proxy_servers,
                member_server=member.server,
                credential=self._hub_credential,
                proxy_ca=config.proxy_ca_pem,
            )

    def _hub_credential(self) -> kube.ClusterConnection:
        """The agent's current hub credential (a joined identity's rotates)."""
        if self.identity is not None:
            return kube.connection_from_kubeconfig(self.identity.store.kubeconfig_path)
        if self._hub_connection is None:
            raise kube.KubeConfigError("the agent's hub connection was not given to it")
        return self._hub_connection

    async def prepare(self) -> None:
        """Join (with an identity to get), renew the Lease once, start the reporter.

        Each step is retried with backoff while the hub does not answer, or refuses
        without proof (:class:`~.rejection.RejectionCheck`): a hub restarting under the
        agent is waited for; ``/readyz`` stays not ready and SIGTERM works meanwhile.

        Raises:
            JoinError: The hub denied the agent's certificate (joining by itself).
            StateDirError: The state directory cannot be written (joining by itself).
            MemberNotAcceptedError: The hub refused the agent's Lease or MemberReport for
                the rejection window while it was ready: the member is not accepted.
            KubeConfigError: The member's kubeconfig, or the hub's TLS material, does not
                load.
        """
        if self.reporter is not None:
            return
        if self.identity is not None:
            await self.identity.join()
        cfg = self.config
        await self._until_answered(
            f"renew heartbeat Lease {cfg.namespace}/{cfg.name}", self.heartbeat.renew
        )
        self._member = await credentials.hub_client(self.connection)
        self.reporter = MemberReporter(
            self.hub,
            self._member,
            name=cfg.name,
            namespace=cfg.namespace,
            access=self._advertised(),
            probe_interval=cfg.probe_interval,
            probe_timeout=cfg.probe_timeout,
            rejection=self.rejection,
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
        await self._until_answered(
            f"read MemberReport {cfg.namespace}/{cfg.name}", self.reporter.start
        )

    def _advertised(self) -> dict[str, object]:
        """What the report says of the way in: the flags, and the cluster proxy's needs."""
        cfg = self.config
        if not cfg.proxy_servers:
            return advertised(cfg.server, cfg.ca_pem, cfg.proxy_url)
        # Behind the proxy a consumer verifies the member's own serving certificate: its CA
        # (given, or the member kubeconfig's) and a name it holds.
        host = urlsplit(self.connection.server).hostname
        return advertised(
            cfg.server,
            cfg.ca_pem or self.connection.ca_data,
            cfg.proxy_url,
            cluster_proxy=True,
            tls_server_name=cfg.tls_server_name or host,
        )

    async def _until_answered(self, what: str, call: Callable[[], Awaitable[object]]) -> None:
        """Call ``call`` until it succeeds; refusals count toward a proof (then raised)."""
        window = self.rejection.window
        cap = min(MAX_BACKOFF, max(window / 4, 0.5))
        throttle = kube.Throttle(
            what,
            logger=_log,
            backoff=kube.Backoff(first=min(0.5, cap), cap=cap),
            extra={"object": f"{self.config.namespace}/{self.config.name}"},
        )
        while True:
            try:
                await call()
            except kube.KubeConfigError:
                raise
            except kube.KubeError as exc:
                note = await self.rejection.failure(self.hub, exc)
                await throttle.pause(exc, note=note)
                continue
            self.rejection.succeeded()
            throttle.succeeded()
            return

    async def run(self) -> None:
        """Report, renew, rotate, keep the consumer token until cancelled (or rejected).

        Raises:
            MemberNotAcceptedError: The hub refused the Lease or the MemberReport for the
                rejection window while it was ready (``manager reject``).
        """
        await self.prepare()
        assert self.reporter is not None
        running = kube.TaskSet(f"agent {self.reporter.key}", logger=_log)
        # Awaited here: the first to end (a rejection) ends them all and is raised below.
        tasks = [
            running.spawn(self.reporter.run(), name="report", awaited=True),
            running.spawn(self.heartbeat.run(), name="heartbeat", awaited=True),
        ]
        if self.identity is not None:
            tasks.append(running.spawn(self.identity.keep_fresh(), name="identity", awaited=True))
        if self.credential is not None:
            tasks.append(running.spawn(self.credential.run(), name="credential", awaited=True))
        if self.proxy_link is not None:
            tasks.append(running.spawn(self.proxy_link.run(), name="proxy link", awaited=True))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await running.stop()
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
        if self.proxy_link is not None:
            await self.proxy_link.stop()
