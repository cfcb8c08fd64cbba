"""A member nothing routes to, reached by its consumers through the hub's cluster proxy.

The member's etcd, kube-apiserver and the real ``agent run`` process run in a network
namespace of the test's own (``tests/support/network/netns.py``): neither the manager, the
proxy nor any consumer can open a connection to it. The agent dials out, to the hub and to
the cluster proxy (``--proxy-server``); the cluster manager (``cluster_proxy_url``) gives
the member's profile the proxy's ``proxy-url`` with the member's name as its user,
``server`` the name the member's certificate holds (the agent's ``tlsServerName``) and the
member's CA. Consumers given only the profile (and a provider file) reach the member: the
credentials library (the runtime's way in), kubectl through ``cluster-inventory
kubeconfig``, the upstream Go ``pkg/access`` v0.1.3 (multicluster-runtime's provider, Kueue
and the Knative Operator build their clients with it) and the Argo CD Secret's
``proxyUrl``. Then the attacks on the proxy's trust, on the hub that decides it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import CONDITION_CONTROL_PLANE_HEALTHY
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    connect,
    load_provider_file,
)
from cluster_inventory.integrations.sync.argocd import render_cluster_secret
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.proxy import member_proxy_url
from cluster_inventory.testing import CertificateAuthority, Fleet, free_port
from cluster_inventory_workshop.access_check import access_check
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.agents import self_subject
from tests.support.hub.cluster_proxy import agent_tls, refused_status, running_proxy
from tests.support.hub.manager import running_manager
from tests.support.network.netns import NetnsMember, netns_member
from tests.support.processes.binaries import kubectl
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

NAME = "edge-proxied"


def _healthy_through(h: Any, inventory: str, proxy_url: str) -> Any:
    async def probe() -> dict[str, Any] | None:
        p = await h.profile(inventory, NAME)
        status = p.get("status") or {}
        healthy = any(
            c["type"] == CONDITION_CONTROL_PLANE_HEALTHY and c["status"] == "True"
            for c in status.get("conditions") or ()
        )
        providers = status.get("accessProviders") or ()
        if healthy and providers and providers[0]["cluster"].get("proxy-url") == proxy_url:
            return p
        return None

    return probe


def _admin(cluster: dict[str, Any], ns: NetnsMember) -> Any:
    """The member's admin, at the address the profile gives (the setup's own credential)."""
    admin = yaml.safe_load(ns.kubeconfig_path.read_text())
    entry = {k: v for k, v in cluster.items() if k != "extensions"}
    return kube.connection_from_kubeconfig(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "m", "cluster": entry}],
            "users": admin["users"],
            "contexts": [
                {"name": "m", "context": {"cluster": "m", "user": admin["users"][0]["name"]}}
            ],
            "current-context": "m",
        }
    )


async def test_consumers_reach_a_member_in_its_own_network_namespace_through_the_proxy(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    account = f"consumer-{uuid.uuid4().hex[:6]}"
    tunnel_port = free_port()
    hub_kubeconfig = tmp_path / "agent-hub.yaml"
    async with (
        await fleet.hub.client() as proxy_hub,
        running_proxy(proxy_hub, test_namespace, tmp_path / "proxy", tunnel_port=tunnel_port) as rp,
        netns_member(fleet.hub, forward_ports=(tunnel_port,)) as ns,
        running_manager(
            fleet, test_namespace, agent_heartbeat_multiple=3.0, cluster_proxy_url=rp.connect_url
        ) as h,
    ):
        inventory = await h.inventory("edge", "edge")
        acceptance = await accept(h.hub_client, test_namespace, NAME, ["edge"], lease_duration=1)
        groups = list(acceptance.agent_groups)
        hub_kubeconfig.write_text(
            yaml.safe_dump(fleet.hub.kubeconfig(acceptance.agent_user, groups))
        )
        agent = ns.start_agent(
            NAME, "--hub-kubeconfig", str(hub_kubeconfig), "-n", test_namespace,
            "--proxy-server", rp.tunnel_url, "--proxy-ca-file", str(rp.ca_path),
            "--consumer-service-account", f"{test_namespace}/{account}",
            "--lease-duration", "1", "--probe-interval", "0.5",
        )  # fmt: skip
        try:
            profile = await eventually(
                _healthy_through(h, inventory, member_proxy_url(rp.connect_url, NAME)),
                timeout=60,
                what="healthy via proxy",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nthe agent's output:\n{agent.log_tail(40)}") from None
        [provider] = profile["status"]["accessProviders"]
        cluster = provider["cluster"]
        assert cluster["proxy-url"] == rp.connect_url.replace("http://", f"http://{NAME}@")
        assert cluster["server"] == "https://127.0.0.1"  # the host the member's cert holds
        assert "tls-server-name" not in cluster
        assert base64.b64decode(cluster["certificate-authority-data"]) == ns.ca_path.read_bytes()
        assert rp.proxy.routes.get(NAME) is not None

        # Without the proxy the profile's server is nothing a consumer can reach.
        direct = {k: v for k, v in cluster.items() if k != "proxy-url"}
        async with await kube.new_client(_admin(direct, ns)) as nowhere:
            with pytest.raises(kube.ServerUnavailableError):
                await kube.get(nowhere, kube.NAMESPACES, "kube-system")

        # The member's admin, through the proxy, sets up what consumers may do there.
        async with await kube.new_client(_admin(cluster, ns)) as admin:
            await kube.apply(
                admin, kube.NAMESPACES, {"metadata": {"name": test_namespace}}, field_manager="t"
            )
            meta = {"name": account, "namespace": test_namespace}
            await kube.create(admin, kube.SERVICE_ACCOUNTS, {"metadata": meta})
            # A Role of its own: "view" is aggregated by kube-controller-manager, which this
            # member does not run.
            role = {
                "metadata": meta,
                "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
                ],
            }
            await kube.apply(admin, kube.ROLES, role, field_manager="t")
            binding = {
                "metadata": meta,
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": account,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": account, "namespace": test_namespace}
                ],
            }
            await kube.apply(admin, kube.ROLE_BINDINGS, binding, field_manager="t")
            # What pkg/access's check reads: the namespaces (kube-system's UID is the member id).
            cluster_meta = {"name": f"{test_namespace}-{account}"}
            await kube.apply(
                admin,
                kube.CLUSTER_ROLES,
                {
                    "metadata": cluster_meta,
                    "rules": [
                        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}
                    ],
                },
                field_manager="t",
            )
            await kube.apply(
                admin,
                kube.CLUSTER_ROLE_BINDINGS,
                {
                    "metadata": cluster_meta,
                    "roleRef": {
                        **binding["roleRef"],
                        "kind": "ClusterRole",
                        "name": cluster_meta["name"],
                    },
                    "subjects": binding["subjects"],
                },
                field_manager="t",
            )
            kube_system = (await kube.get(admin, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
            marker = {
                "metadata": {"name": "reached", "namespace": test_namespace},
                "data": {"via": "proxy"},
            }
            await kube.apply(admin, kube.CONFIG_MAPS, marker, field_manager="t")

        async def token_published() -> bool:
            try:
                secret = await kube.get(h.hub_client, kube.SECRETS, NAME, inventory)
            except kube.NotFoundError:
                return False
            return bool((secret.get("data") or {}).get("token"))

        await eventually(token_published, timeout=60, what="the consumer token on the hub")

        # 1. The credentials library (what the runtime engages with): the profile only.
        providers = provider_file(
            tmp_path / "providers.json",
            str(PLUGIN),
            ["--namespace", inventory],
            {"KUBECONFIG": str(h.hub.kubeconfig_path)},
        )
        profile = await h.profile(inventory, NAME)
        cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
        async with await connect(profile, providers, cache=cache) as consumer:
            who = await self_subject(consumer)
            assert who["username"] == f"system:serviceaccount:{test_namespace}:{account}"
            found = await eventually(
                lambda: kube.get(consumer, kube.CONFIG_MAPS, "reached", test_namespace),
                what="the consumer's view binding",
            )
            assert found["data"] == {"via": "proxy"}
            with pytest.raises(kube.ForbiddenError):
                await kube.list_objects(consumer, kube.SECRETS, test_namespace)

        # 2. kubectl through `cluster-inventory kubeconfig`.
        out = tmp_path / "member.kubeconfig"
        made = cli(
            "kubeconfig", NAME, "-n", inventory, "--kubeconfig", str(h.hub.kubeconfig_path),
            "-o", str(out),
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        # In a thread: the proxy serves from this test's event loop.
        got = await asyncio.to_thread(
            kubectl,
            "--kubeconfig", str(out), "get", "configmap", "reached", "-n", test_namespace,
            "-o", "jsonpath={.data.via}",
        )  # fmt: skip
        assert (got.returncode, got.stdout) == (0, "proxy"), got.stderr

        # 3. The upstream Go pkg/access v0.1.3 (BuildConfigFromCP: how multicluster-runtime's
        # provider, Kueue and the Knative Operator build their clients): its rest.Config has
        # Host, CAData and Proxy only (no tls-server-name), which is all this profile needs.
        binary = await asyncio.to_thread(access_check)  # cached; fails saying how to get Go
        checked = await asyncio.to_thread(
            subprocess.run,
            [str(binary), "-kubeconfig", str(h.hub.kubeconfig_path), "-namespace", inventory,
             "-clusterprofile-provider-file", str(providers)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert checked.returncode == 0, checked.stderr
        [result] = json.loads(checked.stdout)
        assert result.get("error") is None, result
        assert result["server"] == "https://127.0.0.1"  # the name the member's certificate holds
        assert result["kubeSystemUID"] == kube_system  # the member behind the proxy, no other
        assert result["user"] == f"system:serviceaccount:{test_namespace}:{account}"
        assert rp.sample("cluster_inventory_proxy_connects_total", code="200") > 0
        assert rp.sample("cluster_inventory_proxy_tunnels") == 1
        assert rp.sample("cluster_inventory_proxy_tunnel_handshakes_total", code="101") >= 1

        # 4. The Argo CD cluster Secret carries the proxy with the member as its user.
        secret = render_cluster_secret(profile, load_provider_file(providers), namespace="argocd")
        config = json.loads(base64.b64decode(secret["data"]["config"]))
        assert config["proxyUrl"] == rp.connect_url.replace("http://", f"http://{NAME}@")
        assert "serverName" not in config["tlsClientConfig"]
        assert base64.b64decode(secret["data"]["server"]).decode() == "https://127.0.0.1"

        # -- the attacks: each on the real hub's reviews -------------------------------------
        url = rp.tunnel_url
        ca = rp.ca_path
        plain = ssl.create_default_context(cafile=str(ca))
        assert await refused_status(url, NAME, plain) == 401  # no credential at all
        assert await refused_status(url, NAME, plain, token="not-a-token") == 401  # a bad token
        other = await accept(h.hub_client, test_namespace, "edge-other", ["edge"])
        other_tls = agent_tls(fleet.hub, ca, other.agent_user, list(other.agent_groups))
        assert await refused_status(url, NAME, other_tls) == 403  # another member's agent, our name
        bootstrap = agent_tls(
            fleet.hub,
            ca,
            f"cluster-inventory:agent-bootstrap:{NAME}",
            list(acceptance.bootstrap_groups),
        )
        assert await refused_status(url, NAME, bootstrap) == 403  # our bootstrap credential
        forged = CertificateAuthority("not-the-hub").client_pair(
            acceptance.agent_user, tuple(groups)
        )
        forged_conn = kube.ClusterConnection(
            server="https://127.0.0.1",
            ca_data=ca.read_bytes(),
            client_cert_data=forged.cert_pem,
            client_key_data=forged.key_pem,
        )
        assert (
            await refused_status(url, NAME, kube.ssl_context_for(forged_conn)) == 0
        )  # TLS refuses it
        # The member's own tunnel was never displaced: consumers still reach the member.
        route = rp.proxy.routes.get(NAME)
        assert route is not None and route.peer.user == acceptance.agent_user
        async with await connect(profile, providers, cache=cache) as consumer:
            assert (await self_subject(consumer))["username"].endswith(f":{account}")

        # Rejected: the hub no longer lets the identity serve; the next check closes it.
        await reject(h.hub_client, test_namespace, NAME)
        me = agent_tls(fleet.hub, ca, acceptance.agent_user, groups)
        assert await refused_status(url, NAME, me) == 403
        await rp.proxy.recheck()
        assert rp.proxy.routes.get(NAME) is None
        # Every refusal above is counted by its code; the closed tunnel by its reason.
        assert rp.sample("cluster_inventory_proxy_tunnel_handshakes_total", code="401") >= 2
        assert rp.sample("cluster_inventory_proxy_tunnel_handshakes_total", code="403") >= 3
        revoked = "cluster_inventory_proxy_tunnels_closed_by_recheck_total"
        assert rp.sample(revoked, reason="revoked") == 1
