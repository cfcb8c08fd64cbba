"""``manager agents`` as a hub admin runs it (docs/agent.md, "Seeing the agents").

On the join hub (this directory's conftest): one member joined and reporting, one accepted
whose bootstrap credential asked for too long a certificate, and whose copied bootstrap then
was refused; the table says which joined, which is available, and why each refused CSR was
refused, with the CSR's name.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import JoinError, new_private_key, request_certificate
from cluster_inventory.api import format_micro_time
from cluster_inventory.api.constants import FIELD_MANAGER_AGENT
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.testing import ControlPlane
from tests.support.hub.agents import JOIN_NS, agent_identity, bootstrap_identity, event_about
from tests.support.processes.cli import cli


async def test_manager_agents_shows_joined_available_and_why_a_csr_was_refused(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    up = await accept(join_admin, JOIN_NS, "table-up", ["prod"])
    waiting = await accept(join_admin, JOIN_NS, "table-waiting", ["prod"])
    async with await kube.new_client(agent_identity(join_hub, up)) as agent:
        await kube.replace_status(
            agent,
            kube.MEMBER_REPORTS,
            "table-up",
            JOIN_NS,
            {"apiServerHealth": {"status": "True", "reason": "APIServerReady"}},
            field_manager=FIELD_MANAGER_AGENT,
        )
        renew = {"renewTime": format_micro_time(dt.datetime.now(dt.UTC))}
        await kube.request(
            agent,
            "PATCH",
            kube.LEASES.path(JOIN_NS, "table-up"),
            body={"spec": renew},
            content_type="application/merge-patch+json",
        )
    async with await kube.new_client(bootstrap_identity(join_hub, waiting)) as boot:
        with pytest.raises(JoinError):
            await request_certificate(
                boot,
                "table-waiting",
                waiting.id,
                new_private_key(),
                expiration_seconds=10 * 365 * 24 * 3600,
                timeout=30,
            )
    await event_about(join_admin, "table-waiting", "DurationTooLong", namespace=JOIN_NS)
    run = await asyncio.to_thread(
        cli, "manager", "agents", "--hub-kubeconfig", str(join_hub.kubeconfig_path), "-n", JOIN_NS
    )
    assert run.returncode == 0, run.stderr
    table, _, refusals = run.stdout.partition("\n\n")
    lines = table.splitlines()
    header = lines[0].split()
    assert header[:3] == ["NAME", "ACCEPTED", "JOINED"]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line.startswith("table-")}
    assert rows["table-up"][2:4] == ["yes", "True"]
    assert rows["table-waiting"][2:4] == ["no", "-"]
    assert rows["table-waiting"][-3].startswith("DurationTooLong")  # "(8s ago)" after it
    why = [line for line in refusals.splitlines() if line.startswith("table-waiting ")]
    assert waiting.csr_name in why[0]
    assert why and "spec.expirationSeconds is 315360000 s" in why[0]
    assert waiting.id not in run.stdout.replace(waiting.csr_name, "")  # no id but in the name
    for name in ("table-up", "table-waiting"):
        await reject(join_admin, JOIN_NS, name)
