"""Fleet(agent_join=True): the hub signs client CSRs and grants the bootstrap group its RBAC.

What ``fleet up`` and the demo start (docs/testing.md): kube-controller-manager's
``csrsigning`` runs on the hub only, with the client CA the hub trusts, so a certificate it
signs authenticates there; the agents' ClusterRoles the chart installs are bound, so a
bootstrap identity may create and read CSRs and nothing else. A fleet of its own, one
member: it is a different fleet from the session's.
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.api.constants import AGENT_BOOTSTRAP_GROUP
from cluster_inventory.manager.admin.agent_bootstrap import issue_bootstrap_kubeconfig
from cluster_inventory.testing import SIGNER_CONTROLLER, Fleet
from tests.agents import self_subject


async def _may(
    client: kube.ApiClient, verb: str, resource: str, group: str = "", subresource: str = ""
) -> bool:
    review = await kube.request(
        client,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "resource": resource,
                    "group": group,
                    "subresource": subresource,
                }
            },
        },
    )
    return bool(review["status"].get("allowed"))


async def test_a_joinable_fleets_hub_signs_and_lets_bootstrappers_ask_only() -> None:
    async with Fleet(["edge"], agent_join=True) as fleet:
        assert SIGNER_CONTROLLER in fleet.hub.controllers
        assert fleet.member("edge").controllers == ()  # nothing more runs on a member
        async with await fleet.hub.client() as admin:
            issued = await issue_bootstrap_kubeconfig(
                admin, fleet.hub.connection(), "site-1", expiration_seconds=600, timeout=120
            )
        connection = kube.connection_from_kubeconfig(issued.kubeconfig)
        async with await kube.new_client(connection) as bootstrapper:
            who = await self_subject(bootstrapper)  # the signed certificate authenticates
            assert who["username"] == "cluster-inventory:agent-bootstrap:site-1"
            assert AGENT_BOOTSTRAP_GROUP in who["groups"]
            csrs = ("certificatesigningrequests", "certificates.k8s.io")
            assert await _may(bootstrapper, "create", *csrs)
            assert await _may(bootstrapper, "watch", *csrs)
            assert not await _may(bootstrapper, "update", *csrs, subresource="approval")
            assert not await _may(bootstrapper, "list", "secrets")
