"""The member behind NAT: its own network namespace, the hub's cluster proxy, its consumer.

When the machine allows unprivileged user and network namespaces (and the fleet is not kept:
a namespace lives as long as the demo's process), the member that joins by its agent runs in
a network namespace of its own (:func:`cluster_inventory.testing.netns_member`): nothing on
the host routes to its API server. Only the hub's port and the cluster proxy's tunnel port
are forwarded in, outbound. The demo runs ``cluster-inventory proxy run`` on the hub, the
agent keeps a tunnel to it (``--proxy-server``), the cluster manager gives the member's
profile the proxy's access provider (``--cluster-proxy-url``), and the member's consumer,
given nothing but the profile and its provider file, reaches it through the proxy with TLS
end to end (``docs/cluster-proxy.md``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.views import ProfileView
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo._plan import CONSUMER, MANAGER_NAMESPACE, DemoRun
from cluster_inventory.testing import (
    CertificateAuthority,
    ManagedProcess,
    NetnsMember,
    free_port,
    netns_member,
)

__all__ = ["IsolatedMember", "reach_through_proxy", "start_isolated"]


@dataclass
class IsolatedMember:
    """The member in its network namespace and the cluster proxy that reaches it.

    Attributes:
        name: The member's name.
        ns: The namespace (its API server's inside address, CA, kubeconfig).
        proxy: The ``cluster-inventory proxy run`` process.
        tunnel_url: The agents' endpoint (``wss://127.0.0.1:PORT``).
        connect_url: The consumers' ``proxy-url`` (``http://127.0.0.1:PORT``).
        proxy_ca: PEM file of the CA of the proxy's serving certificate.
    """

    name: str
    ns: NetnsMember
    proxy: ManagedProcess
    tunnel_url: str
    connect_url: str
    proxy_ca: Path

    def agent_flags(self) -> list[str]:
        """What ``agent run`` adds to keep its tunnel to the proxy."""
        return [f"--proxy-server={self.tunnel_url}", f"--proxy-ca-file={self.proxy_ca}"]


async def start_isolated(
    demo: DemoRun, stack: contextlib.AsyncExitStack, name: str, controllers: Sequence[str]
) -> IsolatedMember:
    """Start the member ``name`` in its own network namespace and the hub's cluster proxy.

    Both are stopped when ``stack`` closes (the proxy is adopted by the fleet as well).

    Raises:
        NetnsRefusedError: The namespace cannot be made here.
        NetnsMemberError: The member did not start.
        OSError: The proxy could not be started.
    """
    home = demo.fleet.workdir / "cluster-proxy"
    home.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority("demo-cluster-proxy-ca")
    ca_path = home / "ca.crt"
    ca_path.write_bytes(ca.cert_pem)
    ca.serving_pair("127.0.0.1").write(home / "tls.crt", home / "tls.key")
    tunnel_port, connect_port = free_port(), free_port()
    ns = await stack.enter_async_context(
        netns_member(demo.fleet.hub, forward_ports=(tunnel_port,), controllers=controllers)
    )
    argv = [
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "proxy",
        "run",
        f"--kubeconfig={demo.fleet.hub.kubeconfig_path}",
        f"--namespace={MANAGER_NAMESPACE}",
        f"--tunnel-bind-address=127.0.0.1:{tunnel_port}",
        f"--connect-bind-address=127.0.0.1:{connect_port}",
        f"--tls-cert-file={home / 'tls.crt'}",
        f"--tls-key-file={home / 'tls.key'}",
        "--server-id=demo-proxy",
    ]
    proxy = ManagedProcess("cluster-proxy", argv, home / "proxy.log")
    proxy.start()
    demo.fleet.adopt(proxy)
    stack.push_async_callback(proxy.stop)
    return IsolatedMember(
        name,
        ns,
        proxy,
        f"wss://127.0.0.1:{tunnel_port}",
        f"http://127.0.0.1:{connect_port}",
        ca_path,
    )


async def reach_through_proxy(
    demo: DemoRun, me: kube.ApiClient, namespace: str, providers: Path, isolated: IsolatedMember
) -> None:
    """As ``namespace``'s consumer, reach the isolated member with only its profile.

    Prints the profile's way in (server, proxy-url: the proxy with the member as its user)
    and what the consumer read on the member (its namespaces), and records the member as
    reached.

    Raises:
        RuntimeError: The profile does not name the proxy.
        KubeAPIError, ExecPluginFailed: The consumer could not reach the member.
    """
    from cluster_inventory import credentials
    from cluster_inventory.proxy import member_proxy_url

    config = credentials.load_provider_file(providers)
    profile = await kube.get(me, kube.CLUSTER_PROFILES, isolated.name, namespace=namespace)
    cluster = _provider_cluster(profile)
    if cluster.get("proxy-url") != member_proxy_url(isolated.connect_url, isolated.name):
        raise RuntimeError(
            f"{namespace}/{isolated.name}: the profile's access provider does not go through "
            f"the cluster proxy {isolated.connect_url} (proxy-url {cluster.get('proxy-url')!r})"
        )
    async with await credentials.connect(profile, config) as member:
        spaces = await kube.list_objects(member, kube.NAMESPACES)
    names = ",".join(str(objects.meta(n).get("name")) for n in spaces["items"])
    demo.outcome.through_proxy = f"{namespace}/{CONSUMER}"
    rows = [
        [
            f"{namespace}/{isolated.name}",
            str(cluster.get("server", "")),
            str(cluster.get("proxy-url", "")),
            names,
        ]
    ]
    demo.out(
        f"\nTHROUGH THE CLUSTER PROXY as {namespace}/{CONSUMER} ({isolated.name} in its own "
        f"network namespace; its API server {isolated.ns.server} there, no route from here)\n"
        + format_table(
            ("PROFILE", "SERVER", "PROXY-URL", "NAMESPACES ON THE MEMBER"),
            rows,
        )
    )


def _provider_cluster(profile: dict[str, Any]) -> dict[str, Any]:
    """The first access provider's ``cluster`` (KEP-5339's Cluster), or {} when none."""
    providers = ProfileView.of(profile).access_providers
    return dict(providers[0].get("cluster") or {}) if providers else {}
