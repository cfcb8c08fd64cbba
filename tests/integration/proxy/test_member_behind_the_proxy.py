"""A member nothing routes to, reached by its consumers through the hub's cluster proxy.

The member's etcd, kube-apiserver and the real ``agent run`` process run in a network
namespace of the test's own (``tests/support/network/netns.py``): neither the manager, the
proxy nor any consumer can open a connection to it. The agent dials out, to the hub and to
the cluster proxy (``--proxy-server``); the cluster manager (``cluster_proxy_url``) gives
the member's profile the proxy's ``proxy-url`` with the member's name as its user,
``server`` the name the member's certificate holds (the agent's ``tlsServerName``) and the
member's CA. Consumers given only the profile (and a provider file) reach the member: the
credentials library (the runtime's way in), kubectl through ``cluster-inventory
kubeconfig``, the runtime (it engages the member and reconciles its ConfigMaps),
``cluster-inventory apply``, Argo CD's own code on the cluster Secret we render, the upstream
Go ``pkg/access`` v0.1.3 (multicluster-runtime's provider, Kueue
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
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    connect,
    load_provider_file,
)
from cluster_inventory.integrations.sync.argocd import render_cluster_secret
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.runtime import EngagedCluster, EngagementPolicy, FleetManager, Request
from cluster_inventory.testing import CertificateAuthority, Fleet
from cluster_inventory_workshop.access_check import access_check
from cluster_inventory_workshop.argocd_check import argocd_check
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.agents import self_subject
from tests.support.hub.cluster_proxy import agent_tls, proxied_member, refused_status
from tests.support.network.netns import NetnsMember
from tests.support.processes.binaries import kubectl
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

NAME = "edge-proxied"


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
    async with proxied_member(fleet, test_namespace, tmp_path, name=NAME, account=account) as pm:
        rp, ns, h, inventory, profile = pm.proxy, pm.member, pm.harness, pm.inventory, pm.profile
        acceptance = pm.acceptance
        groups = list(acceptance.agent_groups)
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
                    {
                        "apiGroups": [""],
                        "resources": ["configmaps"],
                        # The runtime's informer watches; `apply` patches (server-side).
                        "verbs": ["get", "list", "watch", "create", "patch"],
                    }
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

        await pm.token_published()

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

        # 1b. The runtime engages the member from its profile and reconciles its objects.
        fm = FleetManager(
            h.hub_client,
            providers,
            namespaces=[inventory],
            registry=CollectorRegistry(),
            policy=EngagementPolicy(readiness_recheck=0.5),
            provider_file_poll=0.2,
            graceful_shutdown=5.0,
        )
        seen: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

        @fm.reconciler("v1/ConfigMap", namespace=test_namespace)
        async def saw(request: Request, cluster: EngagedCluster) -> None:
            found = await kube.get(cluster.client, kube.CONFIG_MAPS, request.name, test_namespace)
            seen.put_nowait((cluster.name, found["data"]["via"]))

        await fm.start()
        try:
            engaged = await asyncio.wait_for(seen.get(), 60)
        finally:
            await fm.stop()
        assert engaged == (f"{inventory}/{NAME}", "proxy")

        # 1c. `cluster-inventory apply` writes to the member through its profile.
        manifests = tmp_path / "manifests"
        manifests.mkdir()
        applied_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}}
        (manifests / "cm.yaml").write_text(yaml.safe_dump({**applied_cm, "data": {"by": "apply"}}))
        ran = await asyncio.to_thread(
            cli,
            "apply", "-f", str(manifests), "--profile", NAME, "-n", inventory,
            "--member-namespace", test_namespace, "--provider-file", str(providers),
            "--kubeconfig", str(h.hub.kubeconfig_path), timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        async with await kube.new_client(_admin(cluster, ns)) as admin:
            written = await kube.get(admin, kube.CONFIG_MAPS, "applied", test_namespace)
        assert written["data"] == {"by": "apply"}

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
        # Argo CD's own code (util/db.SecretToCluster, Cluster.RawRestConfig) loads it and
        # lists the member's ConfigMaps through the proxy.
        argocd = await asyncio.to_thread(argocd_check)  # cached; fails saying how to get Go
        secrets = {"apiVersion": "v1", "kind": "SecretList", "items": [secret]}
        argo = await asyncio.to_thread(
            subprocess.run, [str(argocd), test_namespace], input=json.dumps(secrets),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert argo.returncode == 0, argo.stderr
        [seen] = json.loads(argo.stdout)
        assert "error" not in seen, seen
        assert {"reached", "applied"} <= set(seen["configMaps"])

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
