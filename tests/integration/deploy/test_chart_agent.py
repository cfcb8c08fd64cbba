"""The chart's member agent (``agent.enabled``): its render, its member RBAC, and a real run.

The agent is installed on a member, not on the hub, so test_chart.py's hub run leaves it out.
Here its render is checked (a member name is required and must be a DNS-1123 label; the
ClusterRole grants exactly the member reads of docs/agent.md, the Role exactly the minting of
the consumer account's token; one pod, Recreate), and the
rendered Deployment's own command line runs against a real member of the session fleet with a
token of the rendered ServiceAccount, created there with its ClusterRole and binding: the
MemberReport on the hub gets the member's id, and its credential Secret there the consumer
account's token (minted through the rendered Role), so those grants are enough. Its hub identity is
given (``--hub-kubeconfig`` for an accepted member) in place of the bootstrap kubeconfig, as
joining is test_agent_run_join.py's.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.agents import agent_credential_name
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import Fleet, free_port
from cluster_inventory_workshop.chart import CHART_DIR, HelmError, render_chart
from tests.support.hub.manifests import IDENTITY_KINDS, of_kind
from tests.support.processes.binaries import kubectl
from tests.support.waiting import eventually

AGENT = "cluster-inventory-agent"
EXAMPLE = CHART_DIR / "examples" / "agent.yaml"

#: Everything the agent may do on its member: (apiGroup or "nonResourceURL", resource or
#: URL, verb, resourceName or None). Reads only; no write, no Secret, no other namespace.
MEMBER_GRANTS = {
    ("", "namespaces", "get", "kube-system"),
    ("about.k8s.io", "clusterproperties", "list", None),
    ("about.k8s.io", "clusterproperties", "watch", None),
    ("nonResourceURL", "/version", "get", None),
    ("nonResourceURL", "/readyz", "get", None),
}
CONSUMER = "cluster-inventory-consumer"
#: And in its release namespace: mint tokens of the consumer ServiceAccount, by name.
TOKEN_GRANTS = {("", "serviceaccounts/token", "create", CONSUMER)}


def _objects(
    *set_values: str, values: tuple[Path, ...] = (), namespace: str | None = None
) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {"namespace": namespace} if namespace else {}
    text = render_chart([EXAMPLE, *values], set_values=set_values, **kwargs)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str | None]]:
    out = set()
    for rule in rules:
        names = rule.get("resourceNames") or [None]
        for verb in rule["verbs"]:
            for url in rule.get("nonResourceURLs", ()):
                out.add(("nonResourceURL", url, verb, None))
            for group in rule.get("apiGroups", ()):
                for resource in rule["resources"]:
                    for name in names:
                        out.add((group, resource, verb, name))
    return out


# -- the render -------------------------------------------------------------------------------


def test_the_agent_is_off_by_default() -> None:
    text = render_chart()
    assert "agent run" not in text and f"name: {AGENT}\n" not in text


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", r"agent\.memberName is required with agent\.enabled"),
        ("Edge_1", r'agent\.memberName "Edge_1" is not a DNS-1123 label'),
        ("a" * 64, r"is not a DNS-1123 label \(at most 63 characters"),
        ("-edge", r'agent\.memberName "-edge" is not a DNS-1123 label'),
    ],
)
def test_the_agent_needs_a_dns_label_member_name(name: str, message: str) -> None:
    with pytest.raises(HelmError, match=message):
        render_chart(set_values=["agent.enabled=true", f"agent.memberName={name}"])


def test_the_schema_rejects_unknown_agent_keys_and_bad_values() -> None:
    for bad in ("agent.unknownKey=1", "agent.leaseDuration=0", "agent.hubNamespace=Hub_NS"):
        with pytest.raises(HelmError, match="values don't meet the specifications"):
            render_chart(set_values=["agent.enabled=true", "agent.memberName=edge-1", bad])


def test_the_agent_rbac_is_exactly_its_member_reads_and_its_consumers_token() -> None:
    objs = _objects()
    (token_role,) = of_kind(objs, "Role")
    assert _grants(token_role["rules"]) == TOKEN_GRANTS
    (token_binding,) = of_kind(objs, "RoleBinding")
    assert token_binding["roleRef"]["name"] == token_role["metadata"]["name"]
    assert token_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": AGENT, "namespace": "cluster-inventory-system"}
    ]
    accounts = {a["metadata"]["name"] for a in of_kind(objs, "ServiceAccount")}
    assert accounts == {AGENT, CONSUMER}
    (role,) = of_kind(objs, "ClusterRole")
    assert role["metadata"]["name"] == AGENT
    assert _grants(role["rules"]) == MEMBER_GRANTS
    (binding,) = of_kind(objs, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": AGENT,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": AGENT, "namespace": "cluster-inventory-system"}
    ]
    # What consumers may do on the member is the member admin's: a ClusterRole from values.
    objs = _objects("agent.consumer.clusterRole=view")
    (consumer_binding,) = [
        b for b in of_kind(objs, "ClusterRoleBinding") if b["metadata"]["name"] != AGENT
    ]
    assert consumer_binding["roleRef"]["name"] == "view"
    assert consumer_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": CONSUMER, "namespace": "cluster-inventory-system"}
    ]
    # Off: no account, no grant, no flag.
    objs = _objects("agent.consumer.enabled=false")
    assert not of_kind(objs, "Role") and not of_kind(objs, "RoleBinding")
    assert {a["metadata"]["name"] for a in of_kind(objs, "ServiceAccount")} == {AGENT}
    (deployment,) = of_kind(objs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--consumer-")]


def test_the_agent_deployment_is_one_pod_with_its_bootstrap_secret_and_state(
    tmp_path: Path,
) -> None:
    (deployment,) = of_kind(_objects(), "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == AGENT
    (container,) = pod["containers"]
    assert container["command"] == ["cluster-inventory", "agent", "run"]
    args = container["args"]
    assert {
        "--name=edge-1",
        "--namespace=cluster-inventory-system",
        "--bootstrap-kubeconfig=/etc/cluster-inventory-agent/bootstrap/kubeconfig",
        "--state-dir=/var/lib/cluster-inventory-agent",
        "--server=https://edge-1.example.com:6443",
        "--health-probe-bind-address=:8081",
        f"--consumer-service-account=cluster-inventory-system/{CONSUMER}",
        "--consumer-token-lifetime=3600",
    } <= set(args)
    assert not [a for a in args if a.startswith(("--ca-file", "--proxy-url"))]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["bootstrap"]["secret"] == {
        "secretName": "cluster-inventory-agent-bootstrap",
        "items": [{"key": "kubeconfig", "path": "kubeconfig"}],
    }
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    # A PersistentVolumeClaim keeps the identity across pods; a CA bundle becomes a ConfigMap.
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "agent": {
                    "stateVolume": {"existingClaim": "agent-state"},
                    "bootstrapSecret": {"name": "hub-bootstrap", "key": "hub.yaml"},
                    "advertise": {
                        "caBundle": "-----BEGIN CERTIFICATE-----\nx\n",
                        "proxyURL": "http://p:3128",
                    },
                }
            }
        )
    )
    objs = _objects(values=(values,))
    (deployment,) = of_kind(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["state"]["persistentVolumeClaim"] == {"claimName": "agent-state"}
    assert volumes["bootstrap"]["secret"]["secretName"] == "hub-bootstrap"
    assert volumes["ca"]["configMap"] == {"name": f"{AGENT}-ca"}
    args = pod["containers"][0]["args"]
    assert "--bootstrap-kubeconfig=/etc/cluster-inventory-agent/bootstrap/hub.yaml" in args
    assert "--ca-file=/etc/cluster-inventory-agent/ca/ca.crt" in args
    assert "--proxy-url=http://p:3128" in args
    (config,) = of_kind(objs, "ConfigMap")
    assert config["data"]["ca.crt"] == "-----BEGIN CERTIFICATE-----\nx\n"


# -- on a member of the session fleet ---------------------------------------------------------


def _local_args(
    container: dict[str, Any],
    objs: list[dict[str, Any]],
    tmp_path: Path,
    hub_kubeconfig: Path,
    health: int,
    metrics: int,
) -> list[str]:
    """The container's arguments with the hub identity given, files local, ports on loopback."""
    out = []
    for arg in container["args"]:
        key, _, _ = arg.partition("=")
        if key == "--bootstrap-kubeconfig":
            arg = f"--hub-kubeconfig={hub_kubeconfig}"
        elif key == "--state-dir":
            arg = f"--state-dir={tmp_path / 'state'}"
        elif key == "--ca-file":
            (config,) = of_kind(objs, "ConfigMap")
            local = tmp_path / "ca.crt"
            local.write_text(config["data"]["ca.crt"])
            arg = f"--ca-file={local}"
        elif key == "--metrics-bind-address":
            arg = f"--metrics-bind-address=127.0.0.1:{metrics}"
        elif key == "--health-probe-bind-address":
            arg = f"--health-probe-bind-address=127.0.0.1:{health}"
        out.append(arg)
    return out


async def test_the_agent_reports_its_member_with_the_rendered_service_account(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    name, member = next(iter(fleet.members.items()))
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "agent": {
                    "memberName": name,
                    "hubNamespace": test_namespace,
                    "leaseDuration": 2,
                    "probeInterval": 1,
                    "advertise": {"server": member.server, "caBundle": member.ca_pem.decode()},
                }
            }
        )
    )
    # Released into the test's namespace on the member; its ClusterRole and binding are
    # cluster-scoped and removed at the end.
    objs = _objects(values=(values,), namespace=test_namespace)
    (deployment,) = of_kind(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    identity = tmp_path / "identity.yaml"
    identity.write_text(yaml.safe_dump_all([o for o in objs if o["kind"] in IDENTITY_KINDS]))
    on_member = ("-f", str(identity), "--kubeconfig", str(member.kubeconfig_path))
    applied = await asyncio.to_thread(
        kubectl, "apply", "--server-side", "--force-conflicts", *on_member
    )
    assert applied.returncode == 0, applied.stderr
    try:
        async with await member.client() as member_admin:
            token = await kube.request_service_account_token(
                member_admin, test_namespace, pod["serviceAccountName"]
            )
            kube_system = await kube.get(member_admin, kube.NAMESPACES, "kube-system")
        member_kubeconfig = tmp_path / "member.yaml"
        member_kubeconfig.write_text(yaml.safe_dump(member.kubeconfig(token=token.token)))
        member_kubeconfig.chmod(0o600)
        async with await kube.new_client(
            kube.connection_from_kubeconfig(member_kubeconfig)
        ) as agent_on_member:
            # RBAC reaches the authorizer through its informers: wait for the applied role,
            # then see that it grants no more than its reads.
            await eventually(
                lambda: kube.get(agent_on_member, kube.NAMESPACES, "kube-system"),
                what="the agent's ServiceAccount may read kube-system",
            )
            # It may mint tokens of the consumer account (the rendered Role), of no other.
            await eventually(
                lambda: kube.request_service_account_token(
                    agent_on_member, test_namespace, CONSUMER
                ),
                what="the agent's ServiceAccount may mint the consumer's token",
            )
            for refused in (
                lambda: kube.get(agent_on_member, kube.NAMESPACES, "default"),
                lambda: kube.list_objects(agent_on_member, kube.SECRETS, "kube-system"),
                lambda: kube.request_service_account_token(
                    agent_on_member, test_namespace, pod["serviceAccountName"]
                ),
            ):
                with pytest.raises(kube.ForbiddenError):
                    await refused()
        await _run_and_report(
            fleet, name, test_namespace, container, objs, tmp_path, member_kubeconfig,
            kube_system["metadata"]["uid"], token.token,
        )  # fmt: skip
    finally:
        removed = await asyncio.to_thread(kubectl, "delete", "--ignore-not-found", *on_member)
        assert removed.returncode == 0, removed.stderr


async def _run_and_report(
    fleet: Fleet,
    name: str,
    namespace: str,
    container: dict[str, Any],
    objs: list[dict[str, Any]],
    tmp_path: Path,
    member_kubeconfig: Path,
    member_id: str,
    token: str,
) -> None:
    member = fleet.members[name]
    hub_kubeconfig = tmp_path / "hub.yaml"
    async with await fleet.hub.client() as admin:
        acceptance = await accept(admin, namespace, name, ["edge"])
        groups = list(acceptance.agent_groups)
        hub_kubeconfig.write_text(
            yaml.safe_dump(fleet.hub.kubeconfig(acceptance.agent_user, groups))
        )
        hub_kubeconfig.chmod(0o600)
        async with await fleet.hub.client(acceptance.agent_user, groups) as hub:
            await eventually(
                lambda: kube.get(hub, kube.SECRETS, agent_credential_name(name), namespace),
                what="the agent identity may read its credential Secret",
            )
        health, metrics = free_port(), free_port()
        assert container["command"][0] == "cluster-inventory"
        proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
            [
                sys.executable,
                "-m",
                "cluster_inventory.cli",
                *container["command"][1:],
                *_local_args(container, objs, tmp_path, hub_kubeconfig, health, metrics),
                "--kubeconfig",
                str(member_kubeconfig),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "POD_NAMESPACE": namespace},
        )
        try:
            async with aiohttp.ClientSession() as http:

                async def reported() -> bool:
                    assert proc.poll() is None, "the process exited"
                    report = await kube.get(admin, kube.MEMBER_REPORTS, name, namespace)
                    status = report.get("status") or {}
                    if status.get("memberID") != member_id:
                        return False
                    try:
                        async with http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                            return resp.status == 200
                    except aiohttp.ClientConnectionError:
                        return False  # not listening yet

                async def credential_kept() -> bool:
                    secret = await kube.get(
                        admin, kube.SECRETS, agent_credential_name(name), namespace
                    )
                    return bool((secret.get("data") or {}).get("token"))

                try:
                    await eventually(reported, timeout=60, what="the agent reports the member id")
                    await eventually(credential_kept, what="the consumers' token on the hub")
                except AssertionError as exc:
                    proc.kill()
                    _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
                    raise AssertionError(f"{exc}\nstderr:\n{stderr[-3000:]}") from None
                async with http.get(f"http://127.0.0.1:{health}/healthz") as resp:
                    assert resp.status == 200
            status = (await kube.get(admin, kube.MEMBER_REPORTS, name, namespace))["status"]
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr[-3000:]
    assert "forbidden" not in stderr.lower(), stderr[-3000:]
    assert token not in stderr
    assert status["apiServerHealth"]["status"] == "True", status
    assert status["kubernetesVersion"], status
    assert status["server"] == member.server
    assert base64.b64decode(status["certificateAuthorityData"]) == member.ca_pem
