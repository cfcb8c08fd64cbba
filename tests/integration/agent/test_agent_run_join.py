"""``cluster-inventory agent run --bootstrap-kubeconfig``: the agent joins by itself.

On the join hub (this directory's conftest: ``csrsigning`` and the cluster manager's
approver), the hub's admin accepts a member of the session fleet and issues its bootstrap
credential (``manager bootstrap-kubeconfig --member``, which prints the ``agent run`` line);
the agent asks for its certificate with it and reports with its own identity. Restarted, it
reuses the identity in its state directory. Waits follow the agent's log lines and the hub's
objects (no fixed sleeps).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import stat
from pathlib import Path

import aiohttp
import pytest
import yaml
from cryptography import x509

from cluster_inventory import kube
from cluster_inventory.agent import IdentityStore
from cluster_inventory.api.agents import agent_user
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.testing import ControlPlane, Fleet, free_port
from tests.support.hub.agents import JOIN_NS, AgentProcess, agent_csrs
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


async def _ready(http: aiohttp.ClientSession, port: int) -> bool:
    try:
        async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


async def test_agent_run_joins_with_the_bootstrap_credential_and_reuses_its_identity(
    join_hub: ControlPlane,
    join_manager: ClusterManagerRunnable,
    join_admin: kube.ApiClient,
    fleet: Fleet,
    tmp_path: Path,
) -> None:
    name, member = next(iter(fleet.members.items()))
    # The expiring bootstrap credential, as the hub's admin issues it: for an accepted member.
    bootstrap = tmp_path / "bootstrap.yaml"
    before = dt.datetime.now(dt.UTC)
    where = ("--hub-kubeconfig", str(join_hub.kubeconfig_path), "-n", JOIN_NS)
    refused = await asyncio.to_thread(
        cli, "manager", "bootstrap-kubeconfig", "--member", name, "-o", str(bootstrap), *where
    )
    assert refused.returncode == 1 and f"member {name} is not accepted in" in refused.stderr
    assert not bootstrap.exists()
    acceptance = await accept(join_admin, JOIN_NS, name, ["prod"])
    issued = await asyncio.to_thread(
        cli, "manager", "bootstrap-kubeconfig", "--member", name, "-o", str(bootstrap),
        "--expiration", "600", *where,
    )  # fmt: skip
    assert issued.returncode == 0, issued.stderr
    assert f"cluster-inventory:agent-bootstrap:{name} (member {name}'s current acceptance)" in (
        issued.stdout
    )
    command = issued.stdout.splitlines()[-1].strip()
    # JOIN_NS is the agent's default --namespace: the line leaves it out.
    assert (
        command == f"cluster-inventory agent run --name {name} --bootstrap-kubeconfig {bootstrap}"
    )
    assert acceptance.id not in issued.stdout + issued.stderr
    assert stat.S_IMODE(bootstrap.stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in issued.stdout + issued.stderr
    user = yaml.safe_load(bootstrap.read_text())["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    # Expires as asked (the signer may back-date notBefore; allow for the run's seconds).
    assert dt.timedelta(0) < cert.not_valid_after_utc - before <= dt.timedelta(seconds=660)
    async with await kube.new_client(kube.load_connection(bootstrap)) as bootstrapper:
        with pytest.raises(kube.KubeAPIError) as refused:  # it can ask to join, nothing else
            await kube.list_objects(bootstrapper, kube.SECRETS, namespace=JOIN_NS)
        assert refused.value.status == 403
    member_kubeconfig = tmp_path / "member.yaml"
    member_kubeconfig.write_text(yaml.safe_dump(member.kubeconfig()))
    state = tmp_path / "state"
    health = free_port()
    agent = AgentProcess(
        [
            "--name", name,
            "--bootstrap-kubeconfig", str(bootstrap),
            "--state-dir", str(state),
            "--kubeconfig", str(member_kubeconfig),
            "--namespace", JOIN_NS,
            "--lease-duration", "1",
            "--probe-interval", "0.5",
            "--health-probe-bind-address", f"127.0.0.1:{health}",
        ]
    )  # fmt: skip
    async with await member.client() as member_admin:
        kube_system = await kube.get(member_admin, kube.NAMESPACES, "kube-system")
    member_id = kube_system["metadata"]["uid"]

    async def lease_renewed_after(previous: str | None) -> str | None:
        spec = (await kube.get(join_admin, kube.LEASES, name, JOIN_NS))["spec"]
        renewed = spec.get("renewTime")
        return renewed if renewed and renewed != previous else None

    await agent.start()
    try:
        await agent.said("waiting for the hub to approve it")
        await agent.said("hub clients use the certificate")
        async with aiohttp.ClientSession() as http:
            ready = await eventually(
                lambda: _ready(http, health), what="the joined agent's /readyz"
            )
            assert ready

        async def reported() -> bool:
            report = await kube.get(join_admin, kube.MEMBER_REPORTS, name, JOIN_NS)
            return (report.get("status") or {}).get("memberID") == member_id

        await eventually(reported, what="the MemberReport's memberID")
        renewed = await eventually(lambda: lease_renewed_after(None), what="a renewal")
        lease = await kube.get(join_admin, kube.LEASES, name, JOIN_NS)
        assert lease["spec"]["holderIdentity"] == agent_user(name)
        store = IdentityStore(state)
        assert stat.S_IMODE(store.key_path.stat().st_mode) == 0o600
        assert await agent.stop() == 0, agent.text
        first_run = agent.text
        asked = len(await agent_csrs(join_admin, name))

        await agent.start()  # restarted: the stored identity, no new CSR
        await agent.said("hub clients use the certificate")
        await eventually(lambda: lease_renewed_after(renewed), what="a renewal after restart")
        assert await agent.stop() == 0, agent.text
        assert "waiting for the hub to approve" not in agent.text
        assert len(await agent_csrs(join_admin, name)) == asked
        key = store.key_path.read_text()
        for text in (first_run, agent.text):
            assert "Traceback" not in text
            assert "PRIVATE KEY" not in text and "BEGIN CERTIFICATE" not in text
            assert key.splitlines()[1] not in text
    finally:
        with contextlib.suppress(AssertionError, TimeoutError):
            await agent.stop()
        await reject(join_admin, JOIN_NS, name)
        for csr in await agent_csrs(join_admin, name):
            await kube.delete(
                join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr["metadata"]["name"]
            )
