"""A member can only ever be itself: the join attacked by its own holders (issue 43).

On the join hub (this directory's conftest: ``csrsigning`` and the cluster manager's CSR
approver), each test is an attacker holding a credential the hub issued: a bootstrap
credential of one member (``manager bootstrap-kubeconfig --member``), an agent's own
certificate, or one of either from an acceptance that was rejected. What each may do is
docs/agent.md's table "Who can obtain which certificate"; ``kubectl auth can-i`` is a
SelfSubjectAccessReview here (``tests.support.hub.agents.may``). Each attack succeeded before the
identity per acceptance: a bootstrap holder got another joined member's certificate, a
copied bootstrap credential a second one, a rejected agent kept CSR create/list/watch and,
accepted again, wrote again; ten junk CSRs labelled with a member's name stopped its join;
every agent listed every CSR; a ten-year certificate was approved.

RBAC changes reach the API server's authorizer through its informers; there is no event to
wait on from outside, so a revocation is polled (``eventually``). Everything else waits on a
watch.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    AgentIdentity,
    JoinError,
    certificate_request_pem,
    certificate_signing_request,
    new_private_key,
    request_certificate,
)
from cluster_inventory.api.agents import agent_credential_name, agent_user
from cluster_inventory.api.constants import AGENT_GROUP, FIELD_MANAGER_AGENT, LABEL_AGENT
from cluster_inventory.kube import certificates
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import Acceptance, accept, reject
from cluster_inventory.testing import ControlPlane
from tests.support.hub.agents import JOIN_NS, bootstrap_identity, event_about, join, may
from tests.support.waiting import eventually

NS = JOIN_NS
CSRS = {"resource": "certificatesigningrequests", "group": "certificates.k8s.io"}


async def _join(
    hub: ControlPlane, admin: kube.ApiClient, name: str
) -> tuple[Acceptance, AgentIdentity]:
    acceptance, identity = await join(hub, admin, name)
    async with await kube.new_client(identity.connection(hub.connection())) as agent:
        await _write_report(agent, name, "the real agent")  # joined: it wrote on the hub
    return acceptance, identity


async def _write_report(client: kube.ApiClient, name: str, value: str) -> None:
    await kube.replace_status(
        client,
        kube.MEMBER_REPORTS,
        name,
        NS,
        {"agentVersion": value},
        field_manager=FIELD_MANAGER_AGENT,
    )


async def _agent_version(admin: kube.ApiClient, name: str) -> str | None:
    report = await kube.get(admin, kube.MEMBER_REPORTS, name, NS)
    return (report.get("status") or {}).get("agentVersion")


def _csr_for(
    member: str, acceptance: str, *, name: str | None = None, seconds: int = 3600
) -> dict[str, Any]:
    """Exactly the CSR ``member``'s agent files for ``acceptance`` (optionally renamed)."""
    body = certificate_signing_request(
        member,
        acceptance,
        certificate_request_pem(member, acceptance, new_private_key()),
        expiration_seconds=seconds,
    )
    if name is not None:
        del body["metadata"]["name"]
        body["metadata"]["generateName"] = name
    return body


def _old_shape(member: str) -> dict[str, Any]:
    """The CSR an agent filed before acceptances had ids (CN, O=agents only, any name)."""
    request = certificates.certificate_request_pem(
        new_private_key(), common_name=agent_user(member), organizations=[AGENT_GROUP]
    )
    return certificates.client_certificate_signing_request(
        request,
        generate_name=f"cluster-inventory-agent-{member}-",
        labels={LABEL_AGENT: member},
        expiration_seconds=3600,
    )


async def _gone(admin: kube.ApiClient, csr: str, timeout: float = 30) -> None:
    """Wait (a watch) until CSR ``csr`` no longer exists."""
    informer = Informer(
        admin, kube.CERTIFICATE_SIGNING_REQUESTS, field_selector=f"metadata.name={csr}"
    )
    gone = asyncio.Event()

    def look(*_: object) -> None:
        if informer.get(csr) is None:
            gone.set()

    informer.add_handler(look)
    async with informer:
        await informer.wait_synced()
        look()
        await asyncio.wait_for(gone.wait(), timeout)


async def _refused_and_deleted(
    admin: kube.ApiClient, manager: ClusterManagerRunnable, csr: str, reason: str
) -> dict[str, Any]:
    event = await event_about(admin, csr, reason)
    await _gone(admin, csr)
    assert csr not in manager.agent_approver.approved
    return event


async def _revoked(client: kube.ApiClient, **attributes: str) -> None:
    await eventually(
        lambda: _not(may(client, **attributes)), what=f"{attributes} revoked", timeout=30
    )


async def _not(allowed: Any) -> bool:
    return not await allowed


async def test_a_bootstrap_holder_for_a_cannot_obtain_joined_member_bs_certificate(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    a = await accept(join_admin, NS, "trust-a", ["prod"])
    b, _ = await _join(join_hub, join_admin, "trust-b")
    async with await kube.new_client(bootstrap_identity(join_hub, a)) as attacker:
        # 1. B's own request, B's acceptance id leaked to the attacker: the one CSR name of
        #    B's acceptance is held by B's request, which the attacker may not replace.
        with pytest.raises(kube.ForbiddenError):
            await request_certificate(attacker, "trust-b", b.id, new_private_key(), timeout=10)
        # 2. The same request under another name, and 3. the shape approved before
        #    acceptances had ids: created (RBAC cannot limit create), then deleted.
        for body, reason in (
            (_csr_for("trust-b", b.id, name="trust-b-"), "WrongAgent"),
            (_old_shape("trust-b"), "WrongAgent"),
        ):
            created = await kube.create(attacker, kube.CERTIFICATE_SIGNING_REQUESTS, body)
            csr = created["metadata"]["name"]
            with pytest.raises(kube.ForbiddenError):  # it cannot even read its own
                await kube.get(attacker, kube.CERTIFICATE_SIGNING_REQUESTS, csr)
            event = await _refused_and_deleted(join_admin, join_manager, csr, reason)
            assert "trust-b" in event["note"] and b.id not in event["note"]
        # The refusal is on the requester's registration too (what `manager agents` shows).
        await event_about(join_admin, "trust-a", "WrongAgent", namespace=NS)
    assert await _agent_version(join_admin, "trust-b") == "the real agent"
    for name in ("trust-a", "trust-b"):
        await reject(join_admin, NS, name)


async def test_a_second_agent_with_a_copy_of_the_bootstrap_credential_gets_nothing(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    c, identity = await _join(join_hub, join_admin, "trust-c")
    async with await kube.new_client(bootstrap_identity(join_hub, c)) as copy:
        # It may replace the acceptance's one CSR (a crashed join needs that), but a
        # bootstrap credential joins once: the member's agent wrote on the hub already.
        with pytest.raises(JoinError, match="deleted before it was issued"):
            await request_certificate(copy, "trust-c", c.id, new_private_key(), timeout=30)
    event = await event_about(join_admin, c.csr_name, "AlreadyJoined")
    assert "joins once" in event["note"]
    async with await kube.new_client(identity.connection(join_hub.connection())) as agent:
        await _write_report(agent, "trust-c", "still the real agent")
    await reject(join_admin, NS, "trust-c")


async def test_a_rejected_identity_can_do_nothing_on_the_hub(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    d, identity = await _join(join_hub, join_admin, "trust-d")
    async with (
        await kube.new_client(identity.connection(join_hub.connection())) as agent,
        await kube.new_client(bootstrap_identity(join_hub, d)) as boot,
    ):
        assert await may(agent, "create", **CSRS)
        await reject(join_admin, NS, "trust-d")
        for client in (agent, boot):
            await _revoked(client, verb="create", **CSRS)
            assert not await may(client, "list", **CSRS)
            assert not await may(client, "watch", **CSRS)
            assert not await may(client, "get", **CSRS, name=d.csr_name)
            assert not await may(client, "delete", **CSRS, name=d.csr_name)
            with pytest.raises(kube.ForbiddenError):
                await kube.create(
                    client, kube.CERTIFICATE_SIGNING_REQUESTS, _csr_for("trust-d", d.id)
                )
        for verb in ("get", "update", "patch"):
            for resource, group, name in (
                ("leases", "coordination.k8s.io", "trust-d"),
                ("memberreports", "cluster-inventory.dev", "trust-d"),
                ("secrets", "", agent_credential_name("trust-d")),
            ):
                allowed = await may(agent, verb, resource, group=group, namespace=NS, name=name)
                assert not allowed, (verb, resource)


async def test_a_name_accepted_again_is_a_new_identity_no_earlier_certificate_carries_into(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    first, old = await _join(join_hub, join_admin, "trust-e")
    await reject(join_admin, NS, "trust-e")
    again, new = await _join(join_hub, join_admin, "trust-e")
    assert again.id != first.id
    async with (
        await kube.new_client(old.connection(join_hub.connection())) as old_agent,
        await kube.new_client(bootstrap_identity(join_hub, first)) as old_boot,
    ):
        # The RoleBinding of the new acceptance exists already: no wait for revocation.
        with pytest.raises(kube.ForbiddenError):
            await _write_report(old_agent, "trust-e", "the old certificate")
        renew = {"spec": {"renewTime": "2030-01-01T00:00:00.000000Z"}}
        with pytest.raises(kube.ForbiddenError):
            await kube.apply(
                old_agent,
                kube.LEASES,
                {"metadata": {"name": "trust-e", "namespace": NS}, **renew},
                field_manager=FIELD_MANAGER_AGENT,
            )
        with pytest.raises(kube.ForbiddenError):
            await kube.get(old_agent, kube.SECRETS, agent_credential_name("trust-e"), NS)
        for client in (old_agent, old_boot):
            for body in (_csr_for("trust-e", first.id), _csr_for("trust-e", again.id)):
                with pytest.raises(kube.ForbiddenError):
                    await kube.create(client, kube.CERTIFICATE_SIGNING_REQUESTS, body)
            assert not await may(client, "get", **CSRS, name=again.csr_name)
    assert await _agent_version(join_admin, "trust-e") == "the real agent"  # the new one's
    assert new.acceptance == again.id and old.acceptance == first.id
    await reject(join_admin, NS, "trust-e")


async def test_junk_csrs_from_one_requester_never_slow_another_members_join(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    f, identity = await _join(join_hub, join_admin, "trust-f")
    g = await accept(join_admin, NS, "trust-g", ["prod"])
    junk: list[str] = []
    async with await kube.new_client(identity.connection(join_hub.connection())) as flooder:
        for i in range(12):  # labelled with the victim's name: the old cap was per label
            body = _old_shape("trust-g") if i % 2 else _csr_for("trust-g", g.id, name="junk-")
            junk.append(
                (await kube.create(flooder, kube.CERTIFICATE_SIGNING_REQUESTS, body))["metadata"][
                    "name"
                ]
            )
        for _ in range(3):  # and unlabelled ones, for no member at all
            body = _old_shape("trust-f")
            body["metadata"]["labels"] = {}
            junk.append(
                (await kube.create(flooder, kube.CERTIFICATE_SIGNING_REQUESTS, body))["metadata"][
                    "name"
                ]
            )
    # The victim joins, at once, with its own bootstrap credential.
    async with await kube.new_client(bootstrap_identity(join_hub, g)) as boot:
        await request_certificate(boot, "trust-g", g.id, new_private_key(), timeout=30)
    for csr in junk:
        await _gone(join_admin, csr)
    refused = {reason for name, reason in join_manager.agent_approver.deleted if name in junk}
    assert refused <= {"WrongAgent", "InvalidAgentRequest", "TooManyPending"}, refused
    assert not set(junk) & set(join_manager.agent_approver.approved)
    for name in (f.name, g.name):
        await reject(join_admin, NS, name)


async def test_an_identity_sees_its_own_csr_and_nothing_of_other_members(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    h, identity = await _join(join_hub, join_admin, "trust-h")
    i, _ = await _join(join_hub, join_admin, "trust-i")
    async with (
        await kube.new_client(identity.connection(join_hub.connection())) as agent,
        await kube.new_client(bootstrap_identity(join_hub, h)) as boot,
    ):
        for client in (agent, boot):
            with pytest.raises(kube.ForbiddenError):
                await kube.list_objects(client, kube.CERTIFICATE_SIGNING_REQUESTS)
            with pytest.raises(kube.ForbiddenError):
                await kube.list_objects(
                    client, kube.CERTIFICATE_SIGNING_REQUESTS, label_selector=LABEL_AGENT
                )
            with pytest.raises(kube.ForbiddenError):
                await kube.get(client, kube.CERTIFICATE_SIGNING_REQUESTS, i.csr_name)
            assert not await may(client, "watch", **CSRS)
            # Its own, by name (a watch with a field selector on it is how the agent waits).
            own = await kube.list_objects(
                client,
                kube.CERTIFICATE_SIGNING_REQUESTS,
                field_selector=f"metadata.name={h.csr_name}",
            )
            assert [o["metadata"]["name"] for o in own["items"]] == [h.csr_name]
    for name in ("trust-h", "trust-i"):
        await reject(join_admin, NS, name)


async def test_a_certificate_longer_than_the_managers_bound_is_refused(
    join_hub: ControlPlane, join_manager: ClusterManagerRunnable, join_admin: kube.ApiClient
) -> None:
    j = await accept(join_admin, NS, "trust-j", ["prod"])
    ten_years = 10 * 365 * 24 * 3600
    async with await kube.new_client(bootstrap_identity(join_hub, j)) as boot:
        with pytest.raises(JoinError, match="deleted before it was issued"):
            await request_certificate(
                boot, "trust-j", j.id, new_private_key(), expiration_seconds=ten_years, timeout=30
            )
        event = await event_about(join_admin, j.csr_name, "DurationTooLong")
        assert "86400" in event["note"]
        # Within the bound (the manager's default, 24 h) it joins: the refusal spent nothing.
        cert = await request_certificate(
            boot, "trust-j", j.id, new_private_key(), expiration_seconds=86400, timeout=30
        )
    assert AgentIdentity(name="trust-j", key_pem=b"", cert_pem=cert).acceptance == j.id
    await reject(join_admin, NS, "trust-j")
