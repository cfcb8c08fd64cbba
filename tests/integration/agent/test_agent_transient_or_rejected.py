"""The agent tells a hub that is not itself yet from a rejection (docs/agent.md).

A hub restarting under an agent refuses it for a while: connections refused, then 403s
while its authorizer has not read the RBAC objects, 503s before its paths are installed. A
hub coming back may also lack, for a moment, what its admins re-apply after it: the agent's
RoleBinding (403 from a ready hub), a policy webhook (500 to every write), a client CA
(401). The agent here is the real ``cluster-inventory agent run`` process on a hub of this
test's own (it is restarted), reporting a member of the session fleet: it keeps running
through all of it, says each outage once and its end once, and reports and renews after.

Once ``manager reject`` deleted its objects, the refusals last: the agent stops after the
rejection window, saying how long it was refused while the hub's ``/readyz`` was ok.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import api, kube
from cluster_inventory.api.agents import agent_object_name, new_acceptance_id
from cluster_inventory.api.constants import AGENT_USER_PREFIX
from cluster_inventory.manager.admin.agents import accept, reject
from cluster_inventory.testing import CertificateAuthority, ControlPlane, Fleet, free_port
from tests.support.hub.agents import AgentProcess, agent_groups
from tests.support.hub.agents import accept as accept_in_test
from tests.support.waiting import eventually

_NS = "agents"
_NAME = "edge-restart"
_RECOVERED = "succeeded again"


def _agent_args(
    tmp_path: Path,
    hub: ControlPlane,
    member: ControlPlane,
    namespace: str,
    name: str,
    window: str,
    acceptance: str,
) -> list[str]:
    identity = tmp_path / "hub.yaml"
    groups = agent_groups(name, acceptance)
    identity.write_text(yaml.safe_dump(hub.kubeconfig(AGENT_USER_PREFIX + name, groups)))
    member_kubeconfig = tmp_path / "member.yaml"
    member_kubeconfig.write_text(yaml.safe_dump(member.kubeconfig()))
    return [
        "--name", name,
        "--hub-kubeconfig", str(identity),
        "--kubeconfig", str(member_kubeconfig),
        "--namespace", namespace,
        "--lease-duration", "1",
        "--probe-interval", "0.5",
        "--rejection-window", window,
    ]  # fmt: skip


def _failing_webhook(namespace: str) -> dict[str, Any]:
    """A policy webhook that is not up: every Lease write in ``namespace`` gets a 500."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "policy-not-up-yet"},
        "webhooks": [
            {
                "name": "leases.policy.test.example",
                "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/validate"},
                "rules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["leases"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            }
        ],
    }


_WEBHOOKS = kube.Resource(
    group="admissionregistration.k8s.io",
    version="v1",
    plural="validatingwebhookconfigurations",
    kind="ValidatingWebhookConfiguration",
    namespaced=False,
)


async def _next_outage(agent: AgentProcess) -> str:
    """The agent's next "cannot renew" warning (one per outage)."""
    warned = agent.count("cannot renew heartbeat Lease")
    return await agent.said("cannot renew heartbeat Lease", times=warned + 1, timeout=60)


async def test_the_agent_survives_a_hub_restart_and_what_follows_it(
    fleet: Fleet, tmp_path: Path
) -> None:
    member = next(iter(fleet.members.values()))
    async with ControlPlane("restart-hub") as hub:
        async with await hub.client() as admin:
            await kube.ensure_crds(admin, api.load_crds())
            await kube.create(admin, kube.NAMESPACES, {"metadata": {"name": _NS}})
            acceptance = await accept_in_test(admin, _NAME, _NS)
        agent = AgentProcess(_agent_args(tmp_path, hub, member, _NS, _NAME, "30", acceptance))

        async def renewed_since(previous: str | None) -> str | None:
            async with await hub.client() as admin:
                lease = await kube.get(admin, kube.LEASES, _NAME, _NS)
            renewed = lease["spec"].get("renewTime")
            return renewed if renewed and renewed != previous else None

        async def reported() -> bool:
            async with await hub.client() as admin:
                report = await kube.get(admin, kube.MEMBER_REPORTS, _NAME, _NS)
            health = ((report.get("status") or {}).get("apiServerHealth") or {}).get("status")
            return health == "True"

        await agent.start()
        try:
            await eventually(reported, timeout=60, what="the agent's first report")
            # 1. The hub restarts: refused connections, then a hub that is still starting.
            await hub.stop_apiserver()
            await hub.start_apiserver()
            await agent.said(_RECOVERED, timeout=60)
            # 2. Its admins re-apply the agent's RoleBinding a moment after it came back:
            # 403s from a hub whose /readyz is ok, for less than the rejection window.
            rbac = agent_object_name(_NAME)
            async with await hub.client() as admin:
                binding = await kube.get(admin, kube.ROLE_BINDINGS, rbac, _NS)
                await kube.delete(admin, kube.ROLE_BINDINGS, rbac, _NS)
                line = await _next_outage(agent)
                assert "(403)" in line and "not yet taken for a rejection" in line, line
                again = {
                    "metadata": {"name": rbac, "namespace": _NS},
                    "roleRef": binding["roleRef"],
                    "subjects": binding["subjects"],
                }
                await kube.apply(admin, kube.ROLE_BINDINGS, again, field_manager="test")
            await agent.said(_RECOVERED, times=2, timeout=60)
            # 3. A policy webhook that is not up yet: every Lease write gets a 500.
            async with await hub.client() as admin:
                await kube.apply(admin, _WEBHOOKS, _failing_webhook(_NS), field_manager="test")
                line = await _next_outage(agent)
                assert "(500 " in line and "failed calling webhook" in line, line
                assert "transient" in line
                await kube.delete(admin, _WEBHOOKS, "policy-not-up-yet")
            await agent.said(_RECOVERED, times=3, timeout=60)
            # 4. The hub's client CA bundle without the agent's signer for a moment: 401s
            # (kube-apiserver reloads --client-ca-file as it changes).
            client_ca = hub.workdir / "certs" / "client-ca.crt"
            good = client_ca.read_bytes()
            swap = client_ca.with_suffix(".swap")
            swap.write_bytes(CertificateAuthority("another-ca").cert_pem)
            swap.replace(client_ca)
            try:
                line = await _next_outage(agent)
                assert "(401 " in line and "transient" in line, line
            finally:
                swap.write_bytes(good)
                swap.replace(client_ca)
            await agent.said(_RECOVERED, times=4, timeout=60)

            # Still running, renewing and reporting: a property change reaches the report.
            assert agent.running, agent.text
            await eventually(lambda: renewed_since(None), what="a renewal after it all")
            prop = f"restart-{uuid.uuid4().hex[:8]}.test.example"
            async with await member.client() as member_admin:
                body = {"metadata": {"name": prop}, "spec": {"value": "after"}}
                await kube.apply(member_admin, kube.CLUSTER_PROPERTIES, body, field_manager="t")
                try:

                    async def property_reported() -> bool:
                        async with await hub.client() as admin:
                            report = await kube.get(admin, kube.MEMBER_REPORTS, _NAME, _NS)
                        props = (report.get("status") or {}).get("properties") or []
                        return any(p["name"] == prop for p in props)

                    await eventually(property_reported, what="a change reported after it all")
                finally:
                    await kube.delete(member_admin, kube.CLUSTER_PROPERTIES, prop)
            assert await agent.stop() == 0, agent.text
        finally:
            with contextlib.suppress(AssertionError, TimeoutError):
                await agent.stop()
        assert "Traceback" not in agent.text
        assert not [line for line in agent.lines if line.startswith("error: ")], agent.text


async def test_a_rejected_agent_stops_saying_how_long_it_was_refused(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    name, member = next(iter(fleet.members.items()))
    async with await fleet.hub.client() as admin:
        acceptance = await accept(admin, test_namespace, name, ["prod"])
        args = _agent_args(tmp_path, fleet.hub, member, test_namespace, name, "2", acceptance.id)
        agent = AgentProcess(args)
        await agent.start()
        try:

            async def reported() -> bool:
                report = await kube.get(admin, kube.MEMBER_REPORTS, name, test_namespace)
                return bool((report.get("status") or {}).get("memberID"))

            await eventually(reported, timeout=60, what="the agent's first report")
            await reject(admin, test_namespace, name)
            code = await agent.ended(timeout=60)
        finally:
            with contextlib.suppress(AssertionError, TimeoutError):
                await agent.stop()
    assert code == 1, agent.text
    # It waited, saying why, before it took the refusals for a rejection.
    assert "not yet taken for a rejection" in agent.text
    (error,) = [line for line in agent.lines if line.startswith("error: ")]
    assert error.startswith(f"error: member {name} is not accepted on the hub yet (or was ")
    assert "while the hub's /readyz answered ok" in error
    assert "Traceback" not in agent.text


async def test_an_agent_never_accepted_stops_once_the_refusals_are_proven(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    member = next(iter(fleet.members.values()))
    args = _agent_args(
        tmp_path, fleet.hub, member, test_namespace, "never-accepted", "1", new_acceptance_id()
    )
    agent = AgentProcess(args)
    await agent.start()
    try:
        code = await agent.ended(timeout=60)
    finally:
        with contextlib.suppress(AssertionError, TimeoutError):
            await agent.stop()
    assert code == 1, agent.text
    (error,) = [line for line in agent.lines if line.startswith("error: ")]
    assert "member never-accepted is not accepted on the hub yet" in error
    assert "refused for " in error
    assert "Traceback" not in agent.text
