"""Joining a pull-mode member (docs/agent.md): CSR, approval, signing, RBAC, rejection.

The join hub (``join_hub``, ``join_manager`` and ``join_admin`` of this directory's conftest)
runs kube-controller-manager's ``csrsigning`` and the cluster manager (its CSR approver among
its controllers). A member is accepted first (``manager.agents.accept``: its acceptance id
and RBAC); its bootstrap identity is the certificate ``manager bootstrap-kubeconfig --member``
issues for that acceptance (made by the test CA here, ``tests.support.hub.agents.bootstrap_identity``).
Waits are watches (an informer and an asyncio.Event), except where the API offers nothing
to watch. The attacks on the join are ``test_agent_trust.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import stat
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    IdentityStore,
    JoinError,
    ensure_identity,
    new_private_key,
    request_certificate,
)
from cluster_inventory.api.agents import agent_user, new_acceptance_id
from cluster_inventory.api.constants import AGENT_GROUP, FIELD_MANAGER_AGENT
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import Acceptance, accept, reject
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.testing import ControlPlane
from tests.support.hub.agents import (
    JOIN_NS,
    bootstrap_identity,
    event_about,
    join,
    self_subject,
    until,
)

NS = JOIN_NS


async def _renew(client: kube.ApiClient, name: str) -> None:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await kube.apply(
        client,
        kube.LEASES,
        {"metadata": {"name": name, "namespace": NS}, "spec": {"renewTime": now}},
        field_manager=FIELD_MANAGER_AGENT,
    )


async def _report(client: kube.ApiClient, name: str) -> None:
    await kube.apply(
        client,
        kube.MEMBER_REPORTS,
        {"metadata": {"name": name, "namespace": NS}, "status": {"agentVersion": "test"}},
        field_manager=FIELD_MANAGER_AGENT,
        subresource="status",
    )


async def test_the_bootstrap_credential_joins_and_the_agent_writes_only_its_own_objects(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    await accept(join_admin, NS, "beta", ["prod"])  # another member, for the 403s below
    acceptance, identity = await join(join_hub, join_admin, "alpha")
    assert acceptance.csr_name in join_manager.agent_approver.approved
    approved = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, acceptance.csr_name)
    (cond,) = [c for c in approved["status"]["conditions"] if c["type"] == "Approved"]
    assert cond["reason"] == "AgentAccepted"

    bootstrap = bootstrap_identity(join_hub, acceptance)
    async with await kube.new_client(identity.connection(bootstrap)) as agent:
        who = await self_subject(agent)
        assert who["username"] == agent_user("alpha")
        assert {AGENT_GROUP, acceptance.group} <= set(who["groups"])
        assert identity.acceptance == acceptance.id
        await _renew(agent, "alpha")
        await _report(agent, "alpha")
        report = await kube.get(join_admin, kube.MEMBER_REPORTS, "alpha", NS)
        assert report["status"]["agentVersion"] == "test"

        for write in (_renew, _report):
            with pytest.raises(kube.ForbiddenError):
                await write(agent, "beta")
        with pytest.raises(kube.ForbiddenError):
            await kube.get(agent, kube.LEASES, "beta", NS)
        with pytest.raises(kube.ForbiddenError):
            await kube.list_objects(agent, kube.SECRETS, NS)
        with pytest.raises(kube.ForbiddenError):
            await kube.get(agent, kube.SECRETS, "alpha", NS)

        deleted = await reject(join_admin, NS, "alpha")
        assert f"RoleBinding {NS}/cluster-inventory-agent-alpha" in deleted
        assert f"ClusterRoleBinding cluster-inventory-agent:{NS}:alpha" in deleted
        # The authorizer's RBAC cache follows the delete within moments; there is no
        # event to wait on from outside, so the write is retried for a bounded time.
        async with asyncio.timeout(20):
            while True:
                try:
                    await kube.get(agent, kube.CERTIFICATE_SIGNING_REQUESTS, acceptance.csr_name)
                except kube.ForbiddenError:
                    break
                await asyncio.sleep(0.1)
    await reject(join_admin, NS, "beta")


async def test_an_agent_renews_its_own_certificate_replacing_its_one_csr(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    acceptance, gamma = await join(join_hub, join_admin, "gamma")
    bootstrap = bootstrap_identity(join_hub, acceptance)
    async with await kube.new_client(gamma.connection(bootstrap)) as agent:
        # A rotation: the agent's own identity asks for its own name; the earlier CSR of the
        # acceptance's one name is replaced.
        renewed = await request_certificate(
            agent, "gamma", acceptance.id, new_private_key(), expiration_seconds=3600, timeout=60
        )
        assert renewed != gamma.cert_pem
    csr = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, acceptance.csr_name)
    assert csr["spec"]["username"] == agent_user("gamma")
    (cond,) = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
    assert cond["reason"] == "AgentRotation"
    await reject(join_admin, NS, "gamma")


async def test_a_stranger_is_left_pending_never_approved(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    acceptance = await accept(join_admin, NS, "epsilon", ["prod"])
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    # The admin may create CSRs, but is none of the acceptance's identities: its CSR is left
    # pending (an admin's is not the approver's to delete) and never approved.
    task = asyncio.create_task(
        request_certificate(
            join_admin, "epsilon", acceptance.id, new_private_key(), on_created=created.set_result
        )
    )
    try:
        csr = await asyncio.wait_for(created, 30)
        event = await event_about(join_admin, csr, "NotAgentIdentity")
        assert "'admin'" in event["note"]
        assert not task.done()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert csr not in join_manager.agent_approver.approved
    await kube.delete(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
    await reject(join_admin, NS, "epsilon")


async def test_the_identity_is_stored_reused_and_usable_as_a_kubeconfig(
    join_hub: ControlPlane,
    join_manager: ClusterManagerRunnable,
    join_admin: kube.ApiClient,
    tmp_path: Path,
) -> None:
    acceptance = await accept(join_admin, NS, "zeta", ["prod"])
    bootstrap = bootstrap_identity(join_hub, acceptance)
    store = IdentityStore(tmp_path / "state")
    first = await asyncio.wait_for(ensure_identity(bootstrap, "zeta", store), 60)
    assert stat.S_IMODE(store.key_path.stat().st_mode) == 0o600
    assert first.key_pem not in repr(first).encode()
    again = await ensure_identity(bootstrap, "zeta", store)  # fresh: no new CSR
    assert again == first
    conn = kube.connection_from_kubeconfig(store.kubeconfig_path)
    async with await kube.new_client(conn) as agent:
        assert (await self_subject(agent))["username"] == agent_user("zeta")

    # 23 h later the 24 h certificate is due: the agent renews with its own identity (a
    # bootstrap identity with no rights proves the bootstrap is not used).
    late = IdentityStore(
        store.directory, now=lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=23)
    )
    nobody = join_hub.connection("nobody")
    renewed = await asyncio.wait_for(ensure_identity(nobody, "zeta", late), 60)
    assert renewed.cert_pem != first.cert_pem and renewed.key_pem != first.key_pem
    assert store.load("zeta") == renewed
    csr = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, acceptance.csr_name)
    assert [c["reason"] for c in csr["status"]["conditions"]] == ["AgentRotation"]
    await reject(join_admin, NS, "zeta")


async def test_an_agent_registration_is_an_agent_member_and_no_error(
    join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    await accept(join_admin, NS, "eta", ["prod"])
    source = join_manager.source
    informer = source.informer
    await until(informer, lambda s: s["metadata"]["name"] == "eta")  # the manager's own
    good, bad = source.snapshot()
    # A member the pool observes through its agent's report, never dials.
    assert good["eta"].connection == AgentMemberKey(NS, "eta")
    assert not [obj for obj, _ in bad if obj["metadata"]["name"] == "eta"]
    events = await kube.list_objects(
        join_admin, kube.EVENTS, NS, field_selector="regarding.name=eta"
    )
    assert not [e for e in events["items"] if e.get("reason") == "InvalidRegistration"]
    await reject(join_admin, NS, "eta")


async def test_a_denied_csr_is_a_clear_join_error(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    # A member the hub has not accepted: the approver leaves its CSR pending for a while.
    acceptance = Acceptance(NS, "theta", new_acceptance_id())
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    async with await kube.new_client(join_hub.connection()) as admin_client:
        # An admin-made stand-in for the bootstrap's CSR rights (no accept: no RBAC).
        task = asyncio.create_task(
            request_certificate(
                admin_client,
                "theta",
                acceptance.id,
                new_private_key(),
                on_created=created.set_result,
            )
        )
        csr = await asyncio.wait_for(created, 30)
        body = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
        body["status"] = {
            "conditions": [
                {"type": "Denied", "status": "True", "reason": "ByAdmin", "message": "no thanks"}
            ]
        }
        resource = kube.CERTIFICATE_SIGNING_REQUESTS
        await kube.request(join_admin, "PUT", resource.path(None, csr) + "/approval", body=body)
        with pytest.raises(JoinError, match="ByAdmin: no thanks") as caught:
            await asyncio.wait_for(task, 30)
    assert caught.value.field == "status.conditions[Denied]"
    await kube.delete(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
