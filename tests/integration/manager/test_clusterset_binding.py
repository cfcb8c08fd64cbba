"""Who gives an inventory which rights on members: the hub's RBAC and the manager's allow-list.

Attacked as a namespace writer: one who may label and annotate hub namespaces but holds no
``create`` on ``clustersets/bind`` cannot bind a namespace to a cluster set once the chart's
ValidatingAdmissionPolicy is installed (the API server asks its authorizer, as OCM's webhook
does for ``managedclustersets/bind``), and whatever an inventory's annotation asks for, the
manager binds on the members only a role its cluster set allows (default ``view``), with a
Warning Event on the Namespace naming the role, the set and the rule.
"""

from __future__ import annotations

import base64
import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_MEMBER_ROLE,
    CLUSTERSET_BIND_SUBRESOURCE,
    CLUSTERSET_BIND_VERB,
    CLUSTERSET_RESOURCE,
    LABEL_CLUSTER_SET,
    PROJECT_DOMAIN,
    REASON_MEMBER_ROLE_NOT_ALLOWED,
)
from cluster_inventory.manager.members.accounts import list_grants
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.manager import Harness, running_manager
from tests.support.waiting import eventually

#: The chart's bind policy as deploy/ holds it (rendered from the chart: make manifests).
POLICY_FILE = Path(__file__).resolve().parents[3] / "deploy" / "manager" / "clusterset-bind.yaml"
_ADMISSION = "admissionregistration.k8s.io"
POLICIES = kube.Resource(
    group=_ADMISSION,
    version="v1",
    plural="validatingadmissionpolicies",
    kind="ValidatingAdmissionPolicy",
    namespaced=False,
)
POLICY_BINDINGS = kube.Resource(
    group=_ADMISSION,
    version="v1",
    plural="validatingadmissionpolicybindings",
    kind="ValidatingAdmissionPolicyBinding",
    namespaced=False,
)
_RBAC = "rbac.authorization.k8s.io"


async def _roles_bound(h: Harness, ns: str) -> set[str]:
    async with await h.member(0).client() as member:
        found = await list_grants(member, h.manager.config.name, h.namespace)
    kinds = {(g.kind, g.inventory) for g in found}
    if ("ServiceAccount", ns) not in kinds:
        return set()
    return {g.role for g in found if g.kind == "ClusterRoleBinding" and g.inventory == ns}


async def _every_binding_of(member: ControlPlane, prefix: str) -> set[str]:
    """Roles of every ClusterRoleBinding on the member named ``<prefix>...`` (labels or not)."""
    async with await member.client() as client:
        listed = await kube.list_objects(client, kube.CLUSTER_ROLE_BINDINGS)
    return {
        b["roleRef"]["name"] for b in listed["items"] if b["metadata"]["name"].startswith(prefix)
    }


async def _refusal_event(h: Harness, ns: str) -> dict[str, Any] | None:
    events = await kube.list_objects(
        h.hub_client, kube.EVENTS, "default", field_selector=f"regarding.name={ns}"
    )
    for event in events["items"]:
        if event.get("reason") == REASON_MEMBER_ROLE_NOT_ALLOWED:
            return event
    return None


async def test_an_annotation_asking_for_cluster_admin_gets_only_what_its_set_allows(
    fleet: Fleet, test_namespace: str
) -> None:
    """A labelled and a fixed inventory both ask for cluster-admin; each gets its set's default."""
    fixed = f"{test_namespace}-fixed"
    async with running_manager(
        fleet,
        test_namespace,
        inventory_namespaces={fixed: ("staging",)},
        member_roles={"prod": ("view", "edit")},
    ) as h:
        wants_admin = {ANNOTATION_MEMBER_ROLE: "cluster-admin"}
        labelled = await h.inventory("prod", "prod", annotations=wants_admin)
        await kube.apply(
            h.hub_client,
            kube.NAMESPACES,
            {"metadata": {"name": fixed, "annotations": wants_admin}},
            field_manager="test",
        )
        h.created_namespaces.append(fixed)
        await h.register("alpha", h.member(0), ["prod", "staging"])
        for ns in (labelled, fixed):
            await eventually(lambda ns=ns: _roles_bound(h, ns), what=f"{ns}'s account and binding")
            assert await _roles_bound(h, ns) == {"view"}
            event = await eventually(
                lambda ns=ns: _refusal_event(h, ns), what=f"the Warning Event on {ns}"
            )
            assert event["type"] == "Warning"
            assert event["regarding"]["kind"] == "Namespace"
            note = event["note"]
            for word in ("'cluster-admin'", "allows view", "get 'view'", ANNOTATION_MEMBER_ROLE):
                assert word in note, note
        assert "cluster set prod allows view, edit" in (await _refusal_event(h, labelled))["note"]
        assert "cluster set staging allows view" in (await _refusal_event(h, fixed))["note"]
        # Nothing named after the manager binds cluster-admin on the member, labelled or not.
        assert "cluster-admin" not in await _every_binding_of(h.member(0), h.manager.config.name)
        # The consumers' token reads, and cannot do what cluster-admin could.
        secret = await kube.get(h.hub_client, kube.SECRETS, "alpha", namespace=labelled)
        token = _decode(secret["data"]["token"])
        member = h.member(0)
        conn = kube.ClusterConnection(server=member.server, ca_data=member.ca_pem, token=token)
        async with await kube.new_client(conn) as consumer:
            await kube.list_objects(consumer, kube.CONFIG_MAPS, "kube-system")
            with pytest.raises(kube.ForbiddenError):
                await kube.list_objects(consumer, kube.SECRETS, "kube-system")
        # A role the set allows is bound, and the refused one's old binding never existed.
        await h.inventory("prod", "prod", annotations={ANNOTATION_MEMBER_ROLE: "edit"})
        await eventually(lambda: _is(h, labelled, {"edit"}), what="prod bound to edit")


async def _is(h: Harness, ns: str, roles: set[str]) -> bool:
    return await _roles_bound(h, ns) == roles


def _decode(value: str) -> str:
    return base64.b64decode(value).decode()


async def test_a_narrower_allow_list_after_a_restart_removes_the_wider_binding(
    fleet: Fleet, test_namespace: str
) -> None:
    """What an older manager bound (here: edit) goes once the allow-list no longer has it."""
    async with await fleet.hub.client() as hub:
        ns = f"{test_namespace}-prod"
        body = {
            "metadata": {
                "name": ns,
                "labels": {LABEL_CLUSTER_SET: "prod"},
                "annotations": {ANNOTATION_MEMBER_ROLE: "edit"},
            }
        }
        await kube.apply(hub, kube.NAMESPACES, body, field_manager="test")
        try:
            async with running_manager(
                fleet, test_namespace, member_roles={"prod": ("view", "edit")}
            ) as h:
                await h.register("alpha", h.member(0), ["prod"])
                await eventually(lambda: _is(h, ns, {"edit"}), what="prod bound to edit")
            async with running_manager(fleet, test_namespace) as narrower:
                await eventually(
                    lambda: _is(narrower, ns, {"view"}), timeout=60, what="edit gone, view bound"
                )
        finally:
            await kube.delete(hub, kube.NAMESPACES, ns)


# -- the namespace writer, against the chart's bind policy ------------------------------------


def _chart_objects(suffix: str) -> list[dict[str, Any]]:
    """The chart's policy, its binding and the binder ClusterRole, named apart for this test."""
    docs = [d for d in yaml.safe_load_all(POLICY_FILE.read_text()) if d]
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] += f"-{suffix}"
        if doc["kind"] == "ValidatingAdmissionPolicyBinding":
            doc["spec"]["policyName"] += f"-{suffix}"
        out.append(doc)
    return out


@contextlib.asynccontextmanager
async def _bind_policy(hub: kube.ApiClient, suffix: str) -> AsyncIterator[str]:
    """Install the chart's bind policy on the hub for one test; yields the binder role's name."""
    objs = _chart_objects(suffix)
    kinds = {
        "ValidatingAdmissionPolicy": POLICIES,
        "ValidatingAdmissionPolicyBinding": POLICY_BINDINGS,
        "ClusterRole": kube.CLUSTER_ROLES,
    }
    assert sorted(o["kind"] for o in objs) == sorted(kinds), [o["kind"] for o in objs]
    try:
        for obj in objs:
            await kube.apply(hub, kinds[obj["kind"]], obj, field_manager="test")
        yield next(o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole")
    finally:
        for obj in objs:
            await kube.delete(hub, kinds[obj["kind"]], obj["metadata"]["name"])


async def _grant(hub: kube.ApiClient, name: str, user: str, rules: list[dict[str, Any]]) -> None:
    await kube.apply(
        hub, kube.CLUSTER_ROLES, {"metadata": {"name": name}, "rules": rules}, field_manager="test"
    )
    await _bind(hub, name, name, user)


async def _bind(hub: kube.ApiClient, name: str, role: str, user: str) -> None:
    await kube.apply(
        hub,
        kube.CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": user}],
        },
        field_manager="test",
    )


def _labelled(name: str, clusterset: str, role: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_CLUSTER_SET: clusterset}}
    if role:
        meta["annotations"] = {ANNOTATION_MEMBER_ROLE: role}
    return {"metadata": meta}


async def _denied_by_policy(client: kube.ApiClient, body: dict[str, Any]) -> bool:
    """True once the policy refuses ``body`` (a server dry run: nothing is stored)."""
    try:
        await kube.apply(client, kube.NAMESPACES, body, field_manager="writer", dry_run=True)
    except kube.ForbiddenError as exc:
        return "clustersets/bind" in str(exc)
    return False


async def test_a_namespace_writer_without_bind_permission_binds_no_cluster_set(
    fleet: Fleet, test_namespace: str
) -> None:
    short = test_namespace[-8:]
    writer, binder = f"writer-{short}", f"binder-{short}"
    target, own = f"{test_namespace}-target", f"{test_namespace}-own"
    hub = await fleet.hub.client()
    names = [f"ns-writer-{short}", f"prod-binder-{short}", f"chart-binder-{short}"]
    try:
        async with _bind_policy(hub, short) as chart_binder:
            namespace_rules = [
                {
                    "apiGroups": [""],
                    "resources": ["namespaces", "namespaces/status"],
                    "verbs": ["get", "list", "create", "update", "patch"],
                }
            ]
            # Both may write any namespace; the binder may also bind set prod, and only prod.
            await _grant(hub, names[0], writer, namespace_rules)
            await _bind(hub, f"{names[0]}-b", names[0], binder)
            bind_prod = {
                "apiGroups": [PROJECT_DOMAIN],
                "resources": [f"{CLUSTERSET_RESOURCE}/{CLUSTERSET_BIND_SUBRESOURCE}"],
                "resourceNames": ["prod"],
                "verbs": [CLUSTERSET_BIND_VERB],
            }
            await _grant(hub, names[1], binder, [bind_prod])
            await kube.create(hub, kube.NAMESPACES, {"metadata": {"name": target}})
            async with (
                await fleet.hub.client(writer) as mallory,
                await fleet.hub.client(binder) as alice,
                running_manager(fleet, test_namespace) as h,
            ):
                await h.register("alpha", h.member(0), ["prod", "staging"])
                await eventually(
                    lambda: _denied_by_policy(mallory, _labelled(target, "prod")),
                    what="the bind policy in force",
                )
                # The writer can neither bind an existing namespace nor create a bound one ...
                with pytest.raises(kube.ForbiddenError, match="clustersets/bind prod"):
                    await kube.apply(
                        mallory, kube.NAMESPACES, _labelled(target, "prod"), field_manager="w"
                    )
                with pytest.raises(kube.ForbiddenError, match="clustersets/bind staging"):
                    await kube.create(mallory, kube.NAMESPACES, _labelled(own, "staging"))
                # ... and the binder binds prod but not staging.
                await eventually(
                    lambda: _allowed(alice, _labelled(target, "prod")), what="the binder's RBAC"
                )
                with pytest.raises(kube.ForbiddenError, match="clustersets/bind staging"):
                    await kube.apply(
                        alice, kube.NAMESPACES, _labelled(target, "staging"), field_manager="a"
                    )
                await kube.apply(
                    alice, kube.NAMESPACES, _labelled(target, "prod"), field_manager="a"
                )
                await eventually(lambda: _roles_bound(h, target), what="the binder's inventory")
                # Once bound, the writer cannot change the role it asks for either.
                with pytest.raises(kube.ForbiddenError, match="clustersets/bind prod"):
                    await kube.apply(
                        mallory,
                        kube.NAMESPACES,
                        _labelled(target, "prod", "cluster-admin"),
                        field_manager="w",
                    )
                # The writer got nothing: no namespace of its own, no grant but the binder's.
                with pytest.raises(kube.NotFoundError):
                    await kube.get(hub, kube.NAMESPACES, own)
                async with await h.member(0).client() as member:
                    found = await list_grants(member, h.manager.config.name, h.namespace)
                assert {(g.inventory, g.role) for g in found} == {(target, ""), (target, "view")}
                # The chart's binder ClusterRole grants the bind (it aggregates into admin).
                await _bind(hub, names[2], chart_binder, writer)
                await eventually(
                    lambda: _allowed(mallory, _labelled(target, "staging")),
                    what="the chart's binder role in force",
                )
    finally:
        for name in names:
            await kube.delete(hub, kube.CLUSTER_ROLES, name)
            await kube.delete(hub, kube.CLUSTER_ROLE_BINDINGS, name)
        await kube.delete(hub, kube.CLUSTER_ROLE_BINDINGS, f"{names[0]}-b")
        for ns in (target, own):
            await kube.delete(hub, kube.NAMESPACES, ns)
        await hub.close()


async def _allowed(client: kube.ApiClient, body: dict[str, Any]) -> bool:
    try:
        await kube.apply(client, kube.NAMESPACES, body, field_manager="writer", dry_run=True)
    except kube.ForbiddenError:
        return False
    return True
