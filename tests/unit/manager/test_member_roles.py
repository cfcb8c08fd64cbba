"""The allow-list of member roles: a namespace never gets more than its cluster set allows."""

from __future__ import annotations

import pytest

from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE, LABEL_CLUSTER_SET
from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.config import read_member_roles_file
from cluster_inventory.manager.rules.inventory import granted_roles, inventories
from cluster_inventory.manager.rules.member_roles import (
    MemberRoles,
    MemberRolesError,
    parse_member_roles,
)

ROLES = MemberRoles(by_set={"prod": ("view", "edit"), "ops": ("admin",)})


def test_a_set_not_listed_allows_the_default_role_only() -> None:
    assert MemberRoles().decide("team-a", ["prod"], "").role == "view"
    asked = MemberRoles().decide("team-a", ["prod"], "cluster-admin")
    assert asked.role == "view"
    assert asked.refusal is not None
    for word in ("team-a", "'cluster-admin'", "prod", "allows view", "get 'view'"):
        assert word in asked.refusal, asked.refusal


def test_a_listed_role_is_granted_and_the_first_is_the_default() -> None:
    assert ROLES.decide("a", ["prod"], "edit").role == "edit"
    assert ROLES.decide("a", ["prod"], "edit").refusal is None
    assert ROLES.decide("a", ["prod"], "").role == "view"
    assert ROLES.decide("a", ["ops"], "").role == "admin"


def test_a_role_allowed_in_another_set_is_not_allowed_here() -> None:
    decided = ROLES.decide("a", ["prod"], "admin")
    assert (decided.role, decided.asked) == ("view", "admin")
    assert decided.refusal is not None and "admin" in decided.refusal


def test_an_inventory_of_several_sets_gets_only_what_every_set_allows() -> None:
    both = MemberRoles(by_set={"a": ("view", "edit"), "b": ("view",)})
    assert both.decide("n", ["a", "b"], "edit").role == "view"
    assert both.decide("n", ["a", "b"], "").role == "view"
    apart = MemberRoles(by_set={"a": ("edit",), "b": ("view",)})
    decided = apart.decide("n", ["a", "b"], "")
    assert decided.role is None  # no common default: no grant rather than a guess
    assert decided.refusal is not None and "no member role in common" in decided.refusal


def test_no_default_role_means_no_grant_for_unlisted_sets() -> None:
    none = MemberRoles(by_set={"prod": ("view",)}, default="")
    assert none.decide("n", ["dev"], "").role is None
    assert none.decide("n", ["dev"], "view").role is None
    assert none.decide("n", ["prod"], "").role == "view"


def test_inventories_carry_the_decided_role_and_the_refusal() -> None:
    namespaces = [
        {
            "metadata": {
                "name": "asks-admin",
                "labels": {LABEL_CLUSTER_SET: "prod"},
                "annotations": {ANNOTATION_MEMBER_ROLE: "cluster-admin"},
            }
        },
        {"metadata": {"name": "fixed", "annotations": {ANNOTATION_MEMBER_ROLE: "edit"}}},
        {
            "metadata": {"name": "going", "labels": {LABEL_CLUSTER_SET: "prod"}},
            "status": {"phase": "Terminating"},
        },
    ]
    invs = inventories(namespaces, {"fixed": ("prod",)}, ROLES)
    assert invs["asks-admin"].member_role == "view"
    assert invs["asks-admin"].role_refusal is not None
    assert invs["fixed"].member_role == "edit" and invs["fixed"].role_refusal is None
    # A terminating inventory is granted nothing: its grants go at once.
    assert granted_roles(invs.values()) == {"asks-admin": "view", "fixed": "edit"}


def test_member_roles_flags_parse_or_name_the_value() -> None:
    assert parse_member_roles(["prod=view,edit", "ops=admin"]) == {
        "prod": ("view", "edit"),
        "ops": ("admin",),
    }
    for bad in ("prod", "=view", "prod=", "prod=a/b"):
        with pytest.raises(MemberRolesError, match="--member-roles"):
            parse_member_roles([bad])
    with pytest.raises(MemberRolesError, match="given twice"):
        parse_member_roles(["prod=view", "prod=edit"])


def test_member_roles_file_reads_or_names_the_file_and_entry(tmp_path) -> None:
    path = tmp_path / "roles.yaml"
    path.write_text("prod: [view, edit]\nops: admin\n")
    assert read_member_roles_file(str(path)) == {"prod": ("view", "edit"), "ops": ("admin",)}
    for text, problem in (
        ("- prod\n", "mapping"),
        ("prod: []\n", "prod"),
        ("prod: [a/b]\n", "prod"),
        ("prod: [view\n", "not valid YAML"),
    ):
        path.write_text(text)
        with pytest.raises(MemberRolesError, match=problem) as info:
            read_member_roles_file(str(path))
        assert str(path) in str(info.value)
    with pytest.raises(MemberRolesError, match="cannot read"):
        read_member_roles_file(str(tmp_path / "missing.yaml"))


def test_the_manager_config_refuses_a_bad_role_name() -> None:
    with pytest.raises(ValueError, match="ClusterRole name"):
        ManagerConfig(member_roles={"prod": ("view", "a/b")})
    with pytest.raises(ValueError, match="none given"):
        ManagerConfig(member_roles={"prod": ()})
    assert ManagerConfig().roles.allowed("any") == ("view",)
