"""The chart's cluster proxy (``proxy.enabled``): its render, its hub RBAC, and a real run.

The render: two stateless replicas that announce ``--server-count=2``, the TLS Secret the
tunnel endpoint serves with (required), a ClusterIP Service for the consumers' CONNECT and a
Service of the chosen type for the agents' tunnels, the manager's ``--cluster-proxy-url`` on
that CONNECT Service, and RBAC that is exactly two bindings to roles Kubernetes provides
(``system:auth-delegator``: TokenReviews and SubjectAccessReviews;
``extension-apiserver-authentication-reader``: the hub's client CA); the agent's
``clusterProxy`` values become its ``--proxy-server`` flags and a CA ConfigMap.

The run: the rendered Deployment's own command line, with a token of the rendered
ServiceAccount (its RBAC applied on the session hub) and loopback ports, becomes ready (it
read the client CA), refuses a bad bearer token with 401 (it could ask the TokenReview: 503
otherwise), opens a tunnel for an accepted agent's certificate (the SubjectAccessReview
answered) and counts both on ``/metrics``; it exits 0 on SIGTERM, refused nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.proxy import dial
from cluster_inventory.testing import Fleet, free_port
from cluster_inventory_workshop.chart import CHART_DIR, HelmError, render_chart
from tests.support.hub.cluster_proxy import agent_tls, refused_status, serving_files
from tests.support.hub.manifests import IDENTITY_KINDS, of_kind
from tests.support.processes.binaries import kubectl
from tests.support.waiting import eventually

EXAMPLE = CHART_DIR / "examples" / "proxy.yaml"
PROXY = "cluster-inventory-proxy"
NAMESPACE = "cluster-inventory-system"


def _objects(
    *set_values: str, release: str = "cluster-inventory", namespace: str = NAMESPACE
) -> list[dict[str, Any]]:
    text = render_chart([EXAMPLE], set_values=set_values, namespace=namespace, release=release)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _container(objs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (deployment,) = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == name]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


# -- the render -------------------------------------------------------------------------------


def test_the_proxy_is_off_by_default_and_the_manager_then_has_no_proxy_url() -> None:
    text = render_chart()
    assert "proxy run" not in text and "--cluster-proxy-url" not in text


def test_the_proxy_needs_its_tls_secret() -> None:
    with pytest.raises(HelmError, match=r"proxy\.tls\.secretName is required"):
        render_chart(set_values=["proxy.enabled=true"])
    for bad in ("proxy.replicas=0", "proxy.tunnelService.type=ExternalName", "proxy.x=1"):
        with pytest.raises(HelmError, match="values don't meet the specifications"):
            render_chart([EXAMPLE], set_values=[bad])


def test_replicas_announce_their_count_and_serve_the_tls_secret() -> None:
    objs = _objects("proxy.replicas=3")
    (deployment,) = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == PROXY]
    assert deployment["spec"]["replicas"] == 3
    container = _container(objs, PROXY)
    assert container["command"] == ["cluster-inventory", "proxy", "run"]
    args = container["args"]
    assert "--server-count=3" in args
    assert f"--namespace={NAMESPACE}" in args
    assert {"--tunnel-bind-address=:8443", "--connect-bind-address=:8090"} <= set(args)
    (tls,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["secretName"] == "cluster-inventory-proxy-tls"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["tunnel"] == 8443 and ports["connect"] == 8090
    services = {s["metadata"]["name"]: s["spec"] for s in of_kind(objs, "Service")}
    assert services[PROXY]["type"] == "ClusterIP"
    assert [p["targetPort"] for p in services[PROXY]["ports"]] == ["connect"]
    assert services[f"{PROXY}-tunnel"]["type"] == "LoadBalancer"
    assert [p["targetPort"] for p in services[f"{PROXY}-tunnel"]["ports"]] == ["tunnel"]
    (pdb,) = [p for p in of_kind(objs, "PodDisruptionBudget") if p["metadata"]["name"] == PROXY]
    assert pdb["spec"]["maxUnavailable"] == 1
    manager = _container(objs, "cluster-inventory-manager")
    assert f"--cluster-proxy-url=http://{PROXY}.{NAMESPACE}.svc:8090" in manager["args"]


def test_the_proxy_rbac_is_two_bindings_to_roles_kubernetes_provides() -> None:
    objs = [o for o in _objects("manager.enabled=false") if o["kind"] in IDENTITY_KINDS]
    assert not of_kind(objs, "ClusterRole") and not of_kind(objs, "Role")
    subject = [{"kind": "ServiceAccount", "name": PROXY, "namespace": NAMESPACE}]
    (cluster_binding,) = of_kind(objs, "ClusterRoleBinding")
    assert cluster_binding["roleRef"]["kind"] == "ClusterRole"
    assert cluster_binding["roleRef"]["name"] == "system:auth-delegator"
    assert cluster_binding["subjects"] == subject
    (binding,) = of_kind(objs, "RoleBinding")
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    assert binding["subjects"] == subject


def test_the_agent_keeps_tunnels_to_the_servers_it_is_given() -> None:
    text = render_chart(
        [CHART_DIR / "examples" / "agent.yaml"],
        set_values=[
            "agent.clusterProxy.servers={wss://proxy-a.example:8443,wss://proxy-b.example:8443}",
            "agent.clusterProxy.caBundle=-----BEGIN CERTIFICATE-----",
            "agent.clusterProxy.tlsServerName=kubernetes.default.svc",
        ],
    )
    objs = [doc for doc in yaml.safe_load_all(text) if doc]
    args = _container(objs, "cluster-inventory-agent")["args"]
    assert [a for a in args if a.startswith("--proxy-server=")] == [
        "--proxy-server=wss://proxy-a.example:8443",
        "--proxy-server=wss://proxy-b.example:8443",
    ]
    assert "--proxy-ca-file=/etc/cluster-inventory-agent/proxy-ca/ca.crt" in args
    assert "--tls-server-name=kubernetes.default.svc" in args
    configs = {c["metadata"]["name"]: c["data"] for c in of_kind(objs, "ConfigMap")}
    assert configs["cluster-inventory-agent-proxy-ca"]["ca.crt"].startswith("-----BEGIN")
    with pytest.raises(HelmError, match="values don't meet the specifications"):
        render_chart(
            [CHART_DIR / "examples" / "agent.yaml"],
            set_values=["agent.clusterProxy.servers={http://proxy.example}"],
        )


# -- the run ----------------------------------------------------------------------------------


def _local_args(args: list[str], workdir: Path, ports: dict[str, int]) -> list[str]:
    """The rendered arguments with every listener on loopback and the mounted TLS local."""
    out = []
    for arg in args:
        flag, _, _ = arg.partition("=")
        if flag in ("--tls-cert-file", "--tls-key-file"):
            arg = f"{flag}={workdir / Path(arg.partition('=')[2]).name}"
        elif flag.endswith("-bind-address"):
            arg = f"{flag}=127.0.0.1:{ports[flag]}"
        out.append(arg)
    return out


async def test_the_rendered_proxy_runs_with_its_service_account_token(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    hub = fleet.hub
    release = f"p{uuid.uuid4().hex[:6]}"
    objs = _objects("manager.enabled=false", release=release, namespace=test_namespace)
    name = f"{release}-cluster-inventory-proxy"
    identity = tmp_path / "identity.yaml"
    identity.write_text(yaml.safe_dump_all([o for o in objs if o["kind"] in IDENTITY_KINDS]))
    kubeconfig = str(hub.kubeconfig_path)
    applied = await asyncio.to_thread(
        kubectl, "apply", "--server-side", "-f", str(identity), "--kubeconfig", kubeconfig
    )
    assert applied.returncode == 0, applied.stderr
    container = _container(objs, name)
    ports = {
        flag: free_port()
        for flag in (
            "--tunnel-bind-address",
            "--connect-bind-address",
            "--metrics-bind-address",
            "--health-probe-bind-address",
        )
    }
    proxy_ca = serving_files(tmp_path, release)
    member = f"edge-{release}"
    async with await hub.client() as admin:
        token = await kube.request_service_account_token(admin, test_namespace, name)
        acceptance = await accept(admin, test_namespace, member, ["edge"])
    sa_kubeconfig = tmp_path / "sa.kubeconfig"
    sa_kubeconfig.write_text(yaml.safe_dump(hub.kubeconfig(name, token=token.token)))
    sa_kubeconfig.chmod(0o600)
    proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
        [
            sys.executable, "-m", "cluster_inventory.cli", *container["command"][1:],
            *_local_args(container["args"], tmp_path, ports), "--kubeconfig", str(sa_kubeconfig),
        ],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "POD_NAME": f"{name}-test"},
    )  # fmt: skip
    health = f"http://127.0.0.1:{ports['--health-probe-bind-address']}"
    metrics = f"http://127.0.0.1:{ports['--metrics-bind-address']}/metrics"
    url = f"wss://127.0.0.1:{ports['--tunnel-bind-address']}"
    try:
        async with aiohttp.ClientSession() as http:

            async def ready() -> bool:
                assert proc.poll() is None, "the proxy exited"
                try:
                    async with http.get(f"{health}/readyz") as resp:
                        return resp.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            try:
                await eventually(ready, timeout=60, what=f"{name} ready")
            except AssertionError as exc:
                proc.kill()
                _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
                raise AssertionError(f"{exc}\nstderr:\n{stderr[-3000:]}") from None
            plain = ssl.create_default_context(cafile=str(proxy_ca))  # no client certificate
            assert await refused_status(url, member, plain, token="not-a-token") == 401
            agent = agent_tls(hub, proxy_ca, acceptance.agent_user, list(acceptance.agent_groups))
            dialled = await dial(url, member, ssl_context=agent)
            try:
                assert dialled.server_id == f"{name}-test"
                assert dialled.server_count == 2

                async def counted() -> bool:
                    async with http.get(metrics) as resp:
                        text = await resp.text()
                    return (
                        "cluster_inventory_proxy_tunnels 1.0" in text
                        and 'cluster_inventory_proxy_tunnel_handshakes_total{code="401"} 1.0'
                        in text
                    )

                await eventually(counted, what="the tunnel and the refusal on /metrics")
            finally:
                await dialled.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        async with await hub.client() as admin:
            # The two bindings outside the test's namespace go with it.
            for binding in of_kind(objs, "ClusterRoleBinding"):
                await kube.delete(admin, kube.CLUSTER_ROLE_BINDINGS, binding["metadata"]["name"])
            for binding in of_kind(objs, "RoleBinding"):
                meta = binding["metadata"]
                await kube.delete(admin, kube.ROLE_BINDINGS, meta["name"], meta["namespace"])
    assert proc.returncode == 0, stderr[-3000:]
    assert "forbidden" not in stderr.lower(), stderr[-3000:]
    assert token.token not in stderr
