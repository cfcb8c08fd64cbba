"""Fleet(agent_join=True): the hub signs client CSRs, so a member can join it by its agent.

What ``fleet up`` and the demo start (docs/testing.md): kube-controller-manager's
``csrsigning`` runs on the hub only, with the client CA the hub trusts, so a certificate it
signs authenticates there. The rest is ``manager accept``'s: a bootstrap credential of the
member's acceptance may create CSRs and read its acceptance's one, nothing else. A fleet of
its own, one member: it is a different fleet from the session's.
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.api.constants import AGENT_BOOTSTRAP_GROUP
from cluster_inventory.manager.admin.agent_bootstrap import issue_bootstrap_kubeconfig
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import SIGNER_CONTROLLER, Fleet
from tests.support.hub.agents import may, self_subject


async def test_a_joinable_fleets_hub_signs_and_lets_bootstrappers_ask_only() -> None:
    async with Fleet(["edge"], agent_join=True) as fleet:
        assert SIGNER_CONTROLLER in fleet.hub.controllers
        assert fleet.member("edge").controllers == ()  # nothing more runs on a member
        async with await fleet.hub.client() as admin:
            await kube.create(admin, kube.NAMESPACES, {"metadata": {"name": "hub-ns"}})
            acceptance = await accept(admin, "hub-ns", "site-1", ["prod"])
            issued = await issue_bootstrap_kubeconfig(
                admin, fleet.hub.connection(), acceptance, expiration_seconds=600, timeout=120
            )
        connection = kube.connection_from_kubeconfig(issued.kubeconfig)
        async with await kube.new_client(connection) as bootstrapper:
            who = await self_subject(bootstrapper)  # the signed certificate authenticates
            assert who["username"] == "cluster-inventory:agent-bootstrap:site-1"
            assert {AGENT_BOOTSTRAP_GROUP, acceptance.bootstrap_group} <= set(who["groups"])
            csrs = {"resource": "certificatesigningrequests", "group": "certificates.k8s.io"}
            assert await may(bootstrapper, "create", **csrs)
            assert await may(bootstrapper, "watch", **csrs, name=acceptance.csr_name)
            assert not await may(bootstrapper, "watch", **csrs)  # not every CSR
            assert not await may(bootstrapper, "get", **csrs, name="another-csr")
            assert not await may(bootstrapper, "update", **csrs, subresource="approval")
            assert not await may(bootstrapper, "list", "secrets")
