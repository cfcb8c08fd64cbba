"""A cluster proxy replica in the test's event loop, on the session fleet's hub (test code only).

The real :class:`~cluster_inventory.proxy.ClusterProxy` (it reads the hub's client CA and
asks the hub's TokenReview and SubjectAccessReview), serving on loopback with a serving
certificate of a CA of its own; :attr:`RunningProxy.ca_path` is what ``agent run
--proxy-ca-file`` is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import CONDITION_CONTROL_PLANE_HEALTHY
from cluster_inventory.manager.admin.agents import Acceptance, accept
from cluster_inventory.proxy import ClusterProxy, ProxyConfig, TunnelRefused, dial, member_proxy_url
from cluster_inventory.testing import (
    CertificateAuthority,
    ControlPlane,
    Fleet,
    NetnsMember,
    free_port,
)
from tests.support.hub.manager import Harness, running_manager
from tests.support.network.netns import netns_member
from tests.support.waiting import eventually


@dataclass
class RunningProxy:
    """A running replica.

    Attributes:
        proxy: The replica.
        ca_path: PEM of the CA its serving certificate is signed by.
        tunnel_url: The agents' endpoint, ``wss://127.0.0.1:PORT``.
        connect_url: The consumers' ``proxy-url``, ``http://127.0.0.1:PORT``.
        registry: Where the replica counts (its own).
    """

    proxy: ClusterProxy
    ca_path: Path
    tunnel_url: str
    connect_url: str
    registry: CollectorRegistry

    def sample(self, name: str, **labels: str) -> float:
        """The value of the replica's series ``name`` with ``labels`` (0 if it has none)."""
        return self.registry.get_sample_value(name, labels) or 0.0


def serving_files(workdir: Path, server_id: str, *, reuse: bool = False) -> Path:
    """A CA of the replica's own, its serving pair in ``workdir``; returns the CA's path.

    With ``reuse``, the files already there (a replica started again).
    """
    ca_path = workdir / "proxy-ca.crt"
    if reuse and ca_path.exists():
        return ca_path
    ca = CertificateAuthority(f"proxy-ca-{server_id}")
    workdir.mkdir(parents=True, exist_ok=True)
    ca_path.write_bytes(ca.cert_pem)
    ca.serving_pair("127.0.0.1").write(workdir / "tls.crt", workdir / "tls.key")
    return ca_path


@contextlib.asynccontextmanager
async def running_proxy(
    hub: kube.ApiClient,
    namespace: str,
    workdir: Path,
    *,
    tunnel_port: int | None = None,
    connect_port: int | None = None,
    server_id: str = "replica-a",
    server_count: int = 1,
    recheck_interval: float = 300.0,
    reuse_ca: bool = False,
) -> AsyncIterator[RunningProxy]:
    """One replica serving for the manager namespace ``namespace`` while the block runs.

    ``reuse_ca``: serve with the certificate already in ``workdir`` (a replica restarted).
    """
    ca_path = serving_files(workdir, server_id, reuse=reuse_ca)
    config = ProxyConfig(
        namespace=namespace,
        tunnel_address=("127.0.0.1", tunnel_port or free_port()),
        connect_address=("127.0.0.1", connect_port or free_port()),
        tls_cert_file=workdir / "tls.crt",
        tls_key_file=workdir / "tls.key",
        server_id=server_id,
        server_count=server_count,
        recheck_interval=recheck_interval,
    )
    registry = CollectorRegistry()
    proxy = ClusterProxy(hub, config, registry=registry)
    await proxy.prepare()
    task = asyncio.get_running_loop().create_task(proxy.run())
    try:
        yield RunningProxy(
            proxy,
            ca_path,
            f"wss://127.0.0.1:{proxy.tunnel_port}",
            f"http://127.0.0.1:{proxy.connect_port}",
            registry,
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await proxy.stop()


def agent_tls(hub: ControlPlane, proxy_ca: Path, user: str, groups: list[str]) -> ssl.SSLContext:
    """TLS presenting a hub client certificate of ``user`` in ``groups`` (the hub's client CA),
    trusting the proxy's CA ``proxy_ca``."""
    conn = kube.connection_from_kubeconfig(hub.kubeconfig(user, groups))
    return kube.ssl_context_for(
        kube.ClusterConnection(
            server="https://127.0.0.1",
            ca_data=proxy_ca.read_bytes(),
            client_cert_data=conn.client_cert_data,
            client_key_data=conn.client_key_data,
        )
    )


async def refused_status(
    url: str, member: str, ctx: ssl.SSLContext, token: str | None = None
) -> int:
    """The HTTP status the proxy at ``url`` refuses a tunnel for ``member`` with (0: TLS or
    the connection failed). Fails the test if the tunnel opens."""
    try:
        dialled = await dial(url, member, ssl_context=ctx, token=token)
    except TunnelRefused as refused:
        return refused.status
    await dialled.close()
    raise AssertionError(f"the proxy at {url} opened a tunnel for member {member}")


@dataclass
class ProxiedMember:
    """A member in a network namespace of its own, behind a proxy replica, in an inventory.

    Attributes:
        name: The member's name (its agent's).
        proxy: The replica its agent keeps a tunnel to.
        member: The member (its admin's kubeconfig, processes inside).
        harness: The cluster manager publishing its profile through the proxy.
        inventory: The inventory namespace on the hub.
        profile: Its ClusterProfile once healthy through the proxy.
        acceptance: Its acceptance on the hub (the agent's user and groups).
    """

    name: str
    proxy: RunningProxy
    member: NetnsMember
    harness: Harness
    inventory: str
    profile: dict[str, Any]
    acceptance: Acceptance

    async def token_published(self) -> None:
        """Wait until the agent's consumer token is on the hub (what consumers present).

        Raises:
            AssertionError: Not within 60 s.
        """

        async def published() -> bool:
            try:
                secret = await kube.get(
                    self.harness.hub_client, kube.SECRETS, self.name, self.inventory
                )
            except kube.NotFoundError:
                return False
            return bool((secret.get("data") or {}).get("token"))

        await eventually(published, timeout=60, what="the consumer token on the hub")

    async def grant(
        self, namespace: str, account: str, role: str, rules: list[dict[str, Any]] | None = None
    ) -> None:
        """As the member's admin (from inside): namespace ``namespace``, the consumers'
        ServiceAccount ``account`` there, bound cluster-wide to ClusterRole ``role`` (made
        with ``rules`` when given)."""
        manifests: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": namespace},
            },
        ]
        rbac = "rbac.authorization.k8s.io"
        if rules is not None:
            manifests.append(
                {
                    "apiVersion": f"{rbac}/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": role},
                    "rules": rules,
                }
            )
        manifests.append(
            {
                "apiVersion": f"{rbac}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}-{account}"},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            }
        )
        await self.member.apply(manifests, field_manager="test")

    def admin(self) -> kube.ClusterConnection:
        """The member's admin at the address the profile gives (the setup's own credential)."""
        [provider] = self.profile["status"]["accessProviders"]
        entry = {k: v for k, v in provider["cluster"].items() if k != "extensions"}
        admin = yaml.safe_load(self.member.kubeconfig_path.read_text())
        user = admin["users"][0]
        return kube.connection_from_kubeconfig(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "m", "cluster": entry}],
                "users": [user],
                "contexts": [{"name": "m", "context": {"cluster": "m", "user": user["name"]}}],
                "current-context": "m",
            }
        )


@contextlib.asynccontextmanager
async def proxied_member(
    fleet: Fleet,
    namespace: str,
    workdir: Path,
    *,
    name: str,
    account: str,
    controllers: tuple[str, ...] = (),
    annotations: dict[str, str] | None = None,
) -> AsyncIterator[ProxiedMember]:
    """:class:`ProxiedMember` ``name`` while the block runs: the real ``agent run`` inside its
    namespace (accepted, a tunnel to the replica, minting ``namespace/account``'s token),
    the cluster manager in the test's loop with the replica's CONNECT URL, inventory
    ``edge`` of cluster set ``edge`` (with ``annotations``).

    Raises:
        AssertionError: The profile is not healthy through the proxy within 60 s (the
            agent's log tail is in the message).
    """
    tunnel_port = free_port()
    async with (
        await fleet.hub.client() as proxy_hub,
        running_proxy(proxy_hub, namespace, workdir / "proxy", tunnel_port=tunnel_port) as rp,
        netns_member(fleet.hub, forward_ports=(tunnel_port,), controllers=controllers) as ns,
        running_manager(
            fleet, namespace, agent_heartbeat_multiple=3.0, cluster_proxy_url=rp.connect_url
        ) as h,
    ):
        inventory = await h.inventory("edge", "edge", annotations=annotations)
        acceptance = await accept(h.hub_client, namespace, name, ["edge"], lease_duration=1)
        hub_kubeconfig = workdir / "agent-hub.yaml"
        hub_kubeconfig.write_text(
            yaml.safe_dump(
                fleet.hub.kubeconfig(acceptance.agent_user, list(acceptance.agent_groups))
            )
        )
        agent = ns.start_agent(
            name, "--hub-kubeconfig", str(hub_kubeconfig), "-n", namespace,
            "--proxy-server", rp.tunnel_url, "--proxy-ca-file", str(rp.ca_path),
            "--consumer-service-account", f"{namespace}/{account}",
            "--lease-duration", "1", "--probe-interval", "0.5",
        )  # fmt: skip
        through = member_proxy_url(rp.connect_url, name)

        async def healthy() -> dict[str, Any] | None:
            p = await h.profile(inventory, name)
            status = p.get("status") or {}
            ok = any(
                c["type"] == CONDITION_CONTROL_PLANE_HEALTHY and c["status"] == "True"
                for c in status.get("conditions") or ()
            )
            providers = status.get("accessProviders") or ()
            return (
                p
                if ok and providers and providers[0]["cluster"].get("proxy-url") == through
                else None
            )

        try:
            profile = await eventually(healthy, timeout=60, what="healthy via the proxy")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nthe agent's output:\n{agent.log_tail(40)}") from None
        yield ProxiedMember(name, rp, ns, h, inventory, profile, acceptance)
