"""Joining a pull-mode member (docs/agent.md): CSR, approval, signing, RBAC, rejection.

The join hub (``join_hub``, ``join_manager`` and ``join_admin`` of this directory's conftest)
runs kube-controller-manager's ``csrsigning`` and the cluster manager (its CSR approver among
its controllers). The bootstrap identity is a client certificate in the
bootstrap group, bound to the bootstrap ClusterRole here as the chart binds it. Waits are
watches (an informer and an asyncio.Event), except where the API offers nothing to watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    AgentIdentity,
    IdentityStore,
    JoinError,
    ensure_identity,
    new_private_key,
    request_certificate,
)
from cluster_inventory.api.agents import agent_user
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    AGENT_GROUP,
    FIELD_MANAGER_AGENT,
)
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.testing import ControlPlane
from tests.agents import JOIN_NS, self_subject

NS = JOIN_NS


async def _until(
    informer: Informer, found: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """The first object of a running ``informer`` for which ``found`` holds (woken by its
    events)."""
    changed = asyncio.Event()

    def wake(*_: object) -> None:
        changed.set()

    informer.add_handler(wake)
    try:
        async with asyncio.timeout(timeout):
            await informer.wait_synced()
            while True:
                for obj in informer.items():
                    if found(obj):
                        return obj
                changed.clear()
                await changed.wait()
    finally:
        informer.remove_handler(wake)


async def _event_about(client: kube.ApiClient, csr: str, reason: str) -> dict[str, Any]:
    """The Event the approver recorded on CSR ``csr`` with ``reason`` (Events of a
    cluster-scoped object live in ``default``)."""
    informer = Informer(
        client, kube.EVENTS, namespace="default", field_selector=f"regarding.name={csr}"
    )
    async with informer:
        return await _until(informer, lambda e: e.get("reason") == reason)


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


async def _join(
    join_hub: ControlPlane, join_admin: kube.ApiClient, name: str, bootstrap_user: str
) -> AgentIdentity:
    """Accept ``name``, then join with a bootstrap identity (approved at once)."""
    await accept(join_admin, NS, name, ["prod"])
    key = new_private_key()
    conn = join_hub.connection(bootstrap_user, [AGENT_BOOTSTRAP_GROUP])
    async with await kube.new_client(conn) as boot:
        cert = await request_certificate(boot, name, key, expiration_seconds=3600, timeout=60)
    return AgentIdentity(name=name, key_pem=key, cert_pem=cert)


async def test_csr_waits_for_accept_then_the_agent_writes_only_its_own_objects(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    bootstrap = join_hub.connection("bootstrap-a", [AGENT_BOOTSTRAP_GROUP])
    key = new_private_key()
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    async with await kube.new_client(bootstrap) as boot:
        issued = asyncio.create_task(
            request_certificate(
                boot, "alpha", key, expiration_seconds=3600, on_created=created.set_result
            )
        )
        csr = await asyncio.wait_for(created, 30)
        event = await _event_about(join_admin, csr, "NotAccepted")
        assert "manager accept alpha" in event["note"]
        assert not issued.done()
        pending = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
        assert not (pending.get("status") or {}).get("conditions")

        await accept(join_admin, NS, "alpha", ["prod"])
        await accept(join_admin, NS, "beta", ["prod"])  # another member, for the 403s below
        cert = await asyncio.wait_for(issued, 60)
    assert csr in join_manager.agent_approver.approved
    approved = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
    (cond,) = [c for c in approved["status"]["conditions"] if c["type"] == "Approved"]
    assert cond["reason"] == "AgentAccepted"

    identity = AgentIdentity(name="alpha", key_pem=key, cert_pem=cert)
    async with await kube.new_client(identity.connection(bootstrap)) as agent:
        who = await self_subject(agent)
        assert who["username"] == agent_user("alpha")
        assert AGENT_GROUP in who["groups"]
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
        # The authorizer's RBAC cache follows the delete within moments; there is no
        # event to wait on from outside, so the write is retried for a bounded time.
        async with asyncio.timeout(20):
            while True:
                try:
                    await _renew(agent, "alpha")
                except kube.ForbiddenError:
                    break
                await asyncio.sleep(0.1)
    await reject(join_admin, NS, "beta")


async def test_an_agent_renews_its_own_certificate_but_not_another_members(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    gamma = await _join(join_hub, join_admin, "gamma", "bootstrap-b")
    await accept(join_admin, NS, "delta", ["prod"])
    bootstrap = join_hub.connection("bootstrap-b", [AGENT_BOOTSTRAP_GROUP])
    async with await kube.new_client(gamma.connection(bootstrap)) as agent:
        # A rotation: the agent's own identity asks for its own name.
        renewed = await request_certificate(
            agent, "gamma", new_private_key(), expiration_seconds=3600, timeout=60
        )
        assert renewed != gamma.cert_pem

        created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        stolen = asyncio.create_task(
            request_certificate(agent, "delta", new_private_key(), on_created=created.set_result)
        )
        csr = await asyncio.wait_for(created, 30)
        event = await _event_about(join_admin, csr, "WrongAgent")
        assert "'gamma'" in event["note"] and "'delta'" in event["note"]
        assert not stolen.done()
        stolen.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stolen
    pending = await kube.get(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
    assert not (pending.get("status") or {}).get("certificate")
    assert csr not in join_manager.agent_approver.approved
    for name in ("gamma", "delta"):
        await reject(join_admin, NS, name)


async def test_a_stranger_is_not_a_bootstrap_identity(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    await accept(join_admin, NS, "epsilon", ["prod"])
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    # The admin may create CSRs, but is no bootstrap identity of the manager's.
    task = asyncio.create_task(
        request_certificate(join_admin, "epsilon", new_private_key(), on_created=created.set_result)
    )
    try:
        csr = await asyncio.wait_for(created, 30)
        event = await _event_about(join_admin, csr, "NotBootstrapIdentity")
        assert "'admin'" in event["note"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await kube.delete(join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
    await reject(join_admin, NS, "epsilon")


async def test_the_identity_is_stored_reused_and_usable_as_a_kubeconfig(
    join_hub: ControlPlane,
    join_manager: ClusterManagerRunnable,
    join_admin: kube.ApiClient,
    tmp_path: Path,
) -> None:
    await accept(join_admin, NS, "zeta", ["prod"])
    bootstrap = join_hub.connection("bootstrap-c", [AGENT_BOOTSTRAP_GROUP])
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
    listed = await kube.list_objects(
        join_admin,
        kube.CERTIFICATE_SIGNING_REQUESTS,
        label_selector="cluster-inventory.dev/agent=zeta",
    )
    reasons = sorted(c["reason"] for csr in listed["items"] for c in csr["status"]["conditions"])
    assert reasons == ["AgentAccepted", "AgentRotation"]
    await reject(join_admin, NS, "zeta")


async def test_an_agent_registration_is_an_agent_member_and_no_error(
    join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    await accept(join_admin, NS, "eta", ["prod"])
    source = join_manager.source
    informer = source.informer
    await _until(informer, lambda s: s["metadata"]["name"] == "eta")  # the manager's own
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
    bootstrap = join_hub.connection("bootstrap-d", [AGENT_BOOTSTRAP_GROUP])
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    async with await kube.new_client(bootstrap) as boot:
        task = asyncio.create_task(
            request_certificate(boot, "theta", new_private_key(), on_created=created.set_result)
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
