"""The sync commands as processes (Lease, /healthz /readyz /metrics, SIGTERM) and the printers."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys

import aiohttp
import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.testing import free_port
from tests.support.data.provider_files import PLUGIN
from tests.support.hub.inventory import Inventory
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_argocd_sync_runs_leader_elected_with_probes_and_metrics_and_stops_on_sigterm(
    inventory: Inventory,
) -> None:
    ns, hub = inventory.namespace, inventory.hub
    argo = await inventory.namespace_for("argocd")
    await inventory.publish("c1", inventory.member(0))
    health, metrics = free_port(), free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "argocd",
        "sync",
        "--provider-file",
        str(inventory.provider_file),
        "-n",
        ns,
        "--argocd-namespace",
        argo,
        "--kubeconfig",
        str(inventory.fleet.hub.kubeconfig_path),
        f"--health-probe-bind-address=127.0.0.1:{health}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        "--log-format=json",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        async def secret() -> bool:
            try:
                await kube.get(hub, kube.SECRETS, f"cluster-{ns}-c1", argo)
            except kube.NotFoundError:
                return False
            return True

        await eventually(secret, timeout=60, what="the Secret written by the sync process")
        lease = await kube.get(hub, kube.LEASES, "cluster-inventory-argocd", argo)
        assert lease["spec"]["holderIdentity"]
        assert await _get(f"http://127.0.0.1:{health}/healthz") == (200, "ok")
        assert await _get(f"http://127.0.0.1:{health}/readyz") == (200, "ok")
        status, text = await _get(f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200
        assert 'controller_runtime_reconcile_total{controller="argocd-sync",result="success"}' in (
            text
        )
        assert 'workqueue_depth{controller="argocd-sync",name="argocd-sync"}' in text
        assert "leader_election_master_status" in text
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()[-2000:]
    assert await inventory.token(inventory.member(0)) not in err.decode()
    # the Lease is released on the way out, so a standby takes over at once
    released = await kube.get(hub, kube.LEASES, "cluster-inventory-argocd", argo)
    assert not released["spec"].get("holderIdentity")


async def test_render_and_config_print_what_would_be_used_and_name_bad_input(
    inventory: Inventory,
) -> None:
    ns = inventory.namespace
    member = inventory.member(0)
    await inventory.publish("c1", member)
    kubeconfig = str(inventory.fleet.hub.kubeconfig_path)
    provider_file = str(inventory.provider_file)
    rendered = await asyncio.to_thread(
        cli,
        "argocd",
        "render",
        "c1",
        "-n",
        ns,
        "--provider-file",
        provider_file,
        "--kubeconfig",
        kubeconfig,
        "--decoded",
    )
    assert rendered.returncode == 0, rendered.stderr
    secret = yaml.safe_load(rendered.stdout)
    assert secret["metadata"]["name"] == f"cluster-{ns}-c1"
    assert secret["stringData"]["server"] == member.server
    config = json.loads(secret["stringData"]["config"])
    assert config["execProviderConfig"]["command"] == str(PLUGIN)

    missing = await asyncio.to_thread(
        cli, "argocd", "render", "nope", "-n", ns, "--provider-file", provider_file,
        "--kubeconfig", kubeconfig,
    )  # fmt: skip
    assert missing.returncode == 1 and missing.stderr.startswith("error: "), missing.stderr
    assert "nope" in missing.stderr

    await inventory.patch_status(
        "c1",
        {"accessProviders": [{"name": "other", "cluster": {"server": member.server}}]},
    )
    unrenderable = await asyncio.to_thread(
        cli, "argocd", "render", "c1", "-n", ns, "--provider-file", provider_file,
        "--kubeconfig", kubeconfig,
    )  # fmt: skip
    assert unrenderable.returncode == 1
    assert unrenderable.stderr.startswith(f"error: ClusterProfile {ns}/c1: status.accessProviders")

    fragment = await asyncio.to_thread(
        cli, "multikueue", "config", "--provider-file", provider_file, "-o", "json"
    )
    assert fragment.returncode == 0, fragment.stderr
    doc = json.loads(fragment.stdout)
    assert doc["featureGates"] == {"MultiKueueClusterProfile": True}
    (provider,) = doc["multiKueue"]["clusterProfile"]["accessProviders"]
    assert provider["name"] == "secretreader"
    assert provider["execConfig"]["command"] == str(PLUGIN)

    bad = inventory.provider_file.with_name("bad.json")
    bad.write_text('{"providers": [{"name": "x", "execConfig": {"command": "y"}}]}')
    refused = await asyncio.to_thread(cli, "multikueue", "config", "--provider-file", str(bad))
    assert refused.returncode == 1
    assert "providers[0].execConfig.apiVersion" in refused.stderr


async def test_a_sync_that_cannot_list_the_profiles_stops_before_taking_the_lease(
    inventory: Inventory, tmp_path
) -> None:
    ns, hub = inventory.namespace, inventory.hub
    argo = await inventory.namespace_for("argocd")
    # A user that may hold the sync's Lease in Argo CD's namespace, and read nothing else.
    user = f"u-{ns[-8:]}"
    await kube.apply(
        hub,
        kube.ROLES,
        {
            "metadata": {"name": "lease", "namespace": argo},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "create", "update"],
                }
            ],
        },
        field_manager="test",
    )
    await kube.apply(
        hub,
        kube.ROLE_BINDINGS,
        {
            "metadata": {"name": "lease", "namespace": argo},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
        field_manager="test",
    )
    kubeconfig = tmp_path / "limited.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(inventory.fleet.hub.kubeconfig(user)))
    done = await asyncio.to_thread(
        cli, "argocd", "sync", "--provider-file", str(inventory.provider_file), "-n", ns,
        "--argocd-namespace", argo, "--kubeconfig", str(kubeconfig),
        "--health-probe-bind-address=0", "--metrics-bind-address=0", timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert ns in line and "cannot be read" in line and "forbidden" in line.lower(), line
    assert "Traceback" not in done.stderr
    with pytest.raises(kube.NotFoundError):
        await kube.get(hub, kube.LEASES, "cluster-inventory-argocd", argo)


@pytest.mark.parametrize(
    ("command", "lease"),
    [
        (["multikueue", "sync", "--kueue-namespace", "no-such-kueue"], "no-such-kueue/"),
        (["argocd", "sync", "--argocd-namespace", "no-such-argocd"], "no-such-argocd/"),
    ],
    ids=["multikueue", "argocd"],
)
async def test_a_sync_whose_lease_namespace_is_missing_stops_at_start(
    inventory: Inventory, command: list[str], lease: str
) -> None:
    """Issue 32: the failed Lease create was swallowed; the sync ran forever, ready, idle."""
    if command[0] == "multikueue":  # its first LIST needs Kueue's CRDs on the hub
        from cluster_inventory_workshop.upstream_crds import kueue_crds

        await kube.ensure_crds(inventory.hub, await asyncio.to_thread(kueue_crds))
    extra = ["--provider-file", str(inventory.provider_file), "-n", inventory.namespace]
    done = await asyncio.to_thread(
        cli, *command, *(extra if command[0] == "argocd" else []),
        "--kubeconfig", str(inventory.fleet.hub.kubeconfig_path),
        "--health-probe-bind-address=0", "--metrics-bind-address=0", timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert f"leader election Lease {lease}" in errors[0]
    assert "not found (404 NotFound)" in errors[0]
    assert "Traceback" not in done.stderr
