"""The agents' RBAC shipped for hubs without Helm (api.load_agent_rbac; cut from the chart)."""

from __future__ import annotations

from cluster_inventory import api
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_CLUSTER_ROLE,
    AGENT_BOOTSTRAP_GROUP,
    AGENT_GROUP,
    AGENT_GROUP_ROLE,
)


def test_each_role_may_ask_for_certificates_only_and_is_bound_to_its_group() -> None:
    objs = api.load_agent_rbac()
    roles = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ClusterRole"}
    bindings = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ClusterRoleBinding"}
    assert len(objs) == 4
    for role, group in (
        (AGENT_BOOTSTRAP_CLUSTER_ROLE, AGENT_BOOTSTRAP_GROUP),
        (AGENT_GROUP_ROLE, AGENT_GROUP),
    ):
        assert roles[role]["rules"] == [
            {
                "apiGroups": ["certificates.k8s.io"],
                "resources": ["certificatesigningrequests"],
                "verbs": ["create", "get", "list", "watch"],
            }
        ]
        assert bindings[role]["roleRef"]["name"] == role
        assert [(s["kind"], s["name"]) for s in bindings[role]["subjects"]] == [("Group", group)]
        labels = roles[role]["metadata"]["labels"]
        assert "helm.sh/chart" not in labels and "app.kubernetes.io/managed-by" not in labels
