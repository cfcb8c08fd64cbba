"""Grants on a member: what is held minus what is needed goes, and only what we made counts."""

from __future__ import annotations

from cluster_inventory.api.constants import LABEL_INVENTORY, LABEL_MANAGED_BY
from cluster_inventory.manager.rules.grants import (
    BINDING,
    SERVICE_ACCOUNT,
    Needs,
    compare,
    grant_of,
    needed_grants,
    orphans,
    service_account_name,
    unneeded,
    whole,
)

MANAGER = "ci"
NS = "cluster-inventory-system"


def _sa(inventory: str, name: str | None = None, manager: str = MANAGER) -> dict:
    return {
        "metadata": {
            "name": name or service_account_name(inventory, manager),
            "namespace": NS,
            "labels": {LABEL_MANAGED_BY: manager, LABEL_INVENTORY: inventory},
        }
    }


def _crb(inventory: str, role: str, name: str | None = None, subject: str | None = None) -> dict:
    account = service_account_name(inventory, MANAGER)
    return {
        "metadata": {
            "name": name or f"{account}:{role}",
            "labels": {LABEL_MANAGED_BY: MANAGER, LABEL_INVENTORY: inventory},
        },
        "roleRef": {"name": role},
        "subjects": [{"kind": "ServiceAccount", "name": subject or account, "namespace": NS}],
    }


def test_only_objects_named_as_we_name_them_are_ours() -> None:
    assert grant_of(_sa("team-a"), SERVICE_ACCOUNT, MANAGER) is not None
    assert grant_of(_crb("team-a", "view"), BINDING, MANAGER) is not None
    # Our labels on someone else's object (say the member's admin binding) make it no grant.
    assert grant_of(_sa("team-a", name="default"), SERVICE_ACCOUNT, MANAGER) is None
    assert grant_of(_crb("team-a", "view", name="cluster-admin"), BINDING, MANAGER) is None
    assert grant_of(_crb("team-a", "view", name=f"{MANAGER}-team-a:edit"), BINDING, MANAGER) is None
    # Another manager's objects are not ours either.
    assert grant_of(_sa("team-a", manager="other"), SERVICE_ACCOUNT, MANAGER) is None


def test_what_nothing_needs_is_an_orphan() -> None:
    held = [
        grant_of(_sa("team-a"), SERVICE_ACCOUNT, MANAGER),
        grant_of(_crb("team-a", "view"), BINDING, MANAGER),
        grant_of(_crb("team-a", "cluster-admin"), BINDING, MANAGER),
        grant_of(_sa("gone"), SERVICE_ACCOUNT, MANAGER),
        grant_of(_crb("gone", "view"), BINDING, MANAGER),
    ]
    held = [g for g in held if g is not None]
    needed = needed_grants({"team-a": "view", "new": "edit"}, manager=MANAGER, namespace=NS)
    gone = orphans(held, needed)
    assert {(g.inventory, g.kind, g.role) for g in gone} == {
        ("team-a", BINDING, "cluster-admin"),
        ("gone", SERVICE_ACCOUNT, ""),
        ("gone", BINDING, "view"),
    }
    states = {(g.inventory, g.kind, g.role): s for g, s in compare(held, needed)}
    assert states[("team-a", SERVICE_ACCOUNT, "")] == "held"
    assert states[("team-a", BINDING, "view")] == "held"
    assert states[("team-a", BINDING, "cluster-admin")] == "orphan"
    assert states[("new", BINDING, "edit")] == "needed"
    assert [g.inventory for g, _ in compare(held, needed)] == sorted(
        g.inventory for g, _ in compare(held, needed)
    )


def test_a_binding_to_another_subject_is_not_held_whole() -> None:
    needed = needed_grants({"team-a": "view"}, manager=MANAGER, namespace=NS)
    mine = [
        grant_of(_sa("team-a"), SERVICE_ACCOUNT, MANAGER),
        grant_of(_crb("team-a", "view"), BINDING, MANAGER),
    ]
    held = {g.key: g for g in mine if g is not None}
    assert whole(held, needed)
    edited = grant_of(_crb("team-a", "view", subject="intruder"), BINDING, MANAGER)
    assert edited is not None
    held[edited.key] = edited
    assert not whole(held, needed)
    del held[edited.key]
    assert not whole(held, needed)


def test_nothing_is_unneeded_while_the_needs_are_not_known() -> None:
    held = [g for g in (grant_of(_sa("gone"), SERVICE_ACCOUNT, MANAGER),) if g is not None]
    assert unneeded(held, Needs(roles={}, complete=False), manager=MANAGER, namespace=NS) is None
    gone = unneeded(held, Needs(roles={}), manager=MANAGER, namespace=NS)
    assert [g.name for g in gone or ()] == [service_account_name("gone", MANAGER)]
