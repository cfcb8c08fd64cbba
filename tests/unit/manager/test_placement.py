from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE, LABEL_CLUSTER_SET
from cluster_inventory.kube import ClusterConnection
from cluster_inventory.manager import ProfileKey, Registration
from cluster_inventory.manager.rules.inventory import desired_profiles, inventories, plan
from cluster_inventory.manager.rules.member_roles import MemberRoles

VIEW_ONLY = MemberRoles()


def reg(name, *sets):
    return Registration(
        name=name,
        clustersets=sets,
        connection=ClusterConnection(server=f"https://{name}"),
        display_name=name,
        source=f"Secret ns/{name}",
    )


def ns(name, clusterset=None, terminating=False, role=None):
    meta = {"name": name, "labels": {LABEL_CLUSTER_SET: clusterset} if clusterset else {}}
    if role:
        meta["annotations"] = {ANNOTATION_MEMBER_ROLE: role}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_labelled_and_fixed_namespaces_are_inventories():
    invs = inventories(
        [ns("a", "prod", role="edit"), ns("b"), ns("c", "dev")],
        {"b": ["prod"], "x": ["prod"]},
        MemberRoles(by_set={"prod": ("view", "edit")}),
    )
    assert set(invs) == {"a", "b", "c"}  # x does not exist
    assert invs["a"].member_role == "edit"
    assert invs["b"].member_role == "view"
    assert invs["b"].clustersets == {"prod"}


def test_desired_is_every_member_of_every_inventorys_sets():
    invs = inventories([ns("a", "prod"), ns("b", "prod"), ns("c", "dev")], {}, VIEW_ONLY)
    regs = {"m1": reg("m1", "prod"), "m2": reg("m2", "dev", "prod"), "m3": reg("m3", "qa")}
    desired = desired_profiles(regs, invs)
    assert set(desired) == {
        ProfileKey("a", "m1"),
        ProfileKey("a", "m2"),
        ProfileKey("b", "m1"),
        ProfileKey("b", "m2"),
        ProfileKey("c", "m2"),
    }


def test_plan_creates_missing_deletes_extra_and_leaves_terminating_alone():
    invs = inventories([ns("a", "prod"), ns("t", "prod", terminating=True)], {}, VIEW_ONLY)
    desired = [ProfileKey("a", "m1"), ProfileKey("t", "m1")]
    existing = [ProfileKey("a", "old"), ProfileKey("t", "old")]
    result = plan(desired, existing, invs)
    assert result.create == [ProfileKey("a", "m1")]
    assert result.delete == [ProfileKey("a", "old")]


def test_plan_is_idempotent():
    invs = inventories([ns("a", "prod")], {}, VIEW_ONLY)
    keys = [ProfileKey("a", "m1")]
    assert plan(keys, keys, invs).create == []
    assert plan(keys, keys, invs).delete == []


def test_two_registrations_of_one_member_get_one_profile_per_inventory():
    from cluster_inventory.manager.rules.inventory import DuplicateMember, duplicate_members

    regs = {
        r.name: r
        for r in (
            reg("east", "prod", "dev"),
            reg("east-again", "prod"),
            reg("west", "prod"),
            reg("broken", "prod"),
        )
    }
    invs = inventories([ns("a", "prod"), ns("b", "dev")], {}, VIEW_ONLY)
    # Until the member ids are known every registration gets its profile.
    assert len(desired_profiles(regs, invs)) == 5
    ids = {"east": "uid-1", "east-again": "uid-1", "west": "uid-2"}  # broken: never connected
    assert sorted(desired_profiles(regs, invs, ids)) == [
        ProfileKey("a", "broken"),
        ProfileKey("a", "east"),
        ProfileKey("a", "west"),
        ProfileKey("b", "east"),
    ]
    (dup,) = duplicate_members(regs, invs, ids)
    assert dup == DuplicateMember(
        inventory="a", registration="east-again", kept="east", member_id="uid-1"
    )
    assert "inventory a keeps one profile for it (east)" in str(dup)
