"""What ``manager accept`` grants an acceptance (manager/agents.py): its groups, its one CSR."""

from __future__ import annotations

import pytest

from cluster_inventory import kube
from cluster_inventory.api.agents import new_acceptance_id
from cluster_inventory.api.constants import AGENT_GROUP, AGENT_USER_PREFIX
from cluster_inventory.manager import RegistrationError
from cluster_inventory.manager.admin.agents import Acceptance, agent_objects

ACCEPTANCE = Acceptance("hub-ns", "edge-1", new_acceptance_id())


def _objects() -> dict[str, dict]:
    return {r.kind: o for r, o in agent_objects(ACCEPTANCE, ["edge"]) if r.kind != "Secret"}


def test_every_binding_names_only_the_acceptances_own_groups() -> None:
    objs = _objects()
    subjects = [s for kind in ("RoleBinding", "ClusterRoleBinding") for s in objs[kind]["subjects"]]
    assert {(s["kind"], s["name"]) for s in subjects} == {
        ("Group", ACCEPTANCE.group),
        ("Group", ACCEPTANCE.bootstrap_group),
    }
    # The agent's objects go to the agent only; nothing names a user, or a group every agent
    # (or every acceptance of the name) is in, so nothing outlives `manager reject`.
    assert objs["RoleBinding"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": ACCEPTANCE.group}
    ]
    assert not [s for s in subjects if s["name"] in (AGENT_GROUP, AGENT_USER_PREFIX + "edge-1")]


def test_the_acceptance_may_create_csrs_and_read_one_by_name_only() -> None:
    role = _objects()["ClusterRole"]
    assert role["metadata"]["name"] == "cluster-inventory-agent:hub-ns:edge-1"
    assert role["rules"] == [
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests"],
            "resourceNames": [f"cluster-inventory-agent-edge-1-{ACCEPTANCE.id}"],
            "verbs": ["get", "list", "watch", "delete"],
        },
    ]


def test_the_registration_is_written_last_with_the_acceptance_id() -> None:
    resource, secret = agent_objects(ACCEPTANCE, ["edge"])[-1]
    assert resource == kube.SECRETS
    assert secret["metadata"]["annotations"]["cluster-inventory.dev/acceptance"] == ACCEPTANCE.id


def test_bad_input_is_refused_before_anything() -> None:
    with pytest.raises(RegistrationError, match="leaseDurationSeconds"):
        agent_objects(ACCEPTANCE, ["edge"], lease_duration=0)
    with pytest.raises(RegistrationError, match="cluster set"):
        agent_objects(ACCEPTANCE, [])
