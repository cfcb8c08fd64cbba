"""ApplySet pruning on one member: the parent ConfigMap, and the delete of what left the set.

As ``kubectl apply --prune --applyset`` (KEP-3659): the parent records the group-kinds and
namespaces the set used; what carries the set's label there but is no longer in the manifests
is deleted with its uid as a precondition.
"""

from __future__ import annotations

from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.integrations.delivery._applyset import (
    APPLYSET_GROUP_KINDS,
    APPLYSET_ID_LABEL,
    APPLYSET_NAMESPACES,
    APPLYSET_PART_OF,
    APPLYSET_TOOLING,
    TOOLING,
    ApplySet,
)
from cluster_inventory.integrations.delivery._manifests import Manifest
from cluster_inventory.integrations.delivery._member import MemberApply
from cluster_inventory.integrations.delivery._results import DeliveryError, api_message
from cluster_inventory.kube.informer import object_key

__all__ = ["group_kind", "prune", "read_parent", "write_parent"]


async def _resource_of_group_kind(client: kube.ApiClient, group_kind: str) -> kube.Resource:
    kind, _, group = group_kind.partition(".")
    if not group:
        return await kube.resolve_kind(client, f"v1/{kind}")
    doc = await kube.request(client, "GET", f"/apis/{group}", target=f"discovery /apis/{group}")
    version = ((doc or {}).get("preferredVersion") or {}).get("version")
    if not version:
        raise kube.KindNotFoundError(f"{group_kind}: the member serves no version of {group}")
    return await kube.resolve_kind(client, f"{group}/{version}/{kind}")


def group_kind(m: Manifest) -> str:
    return f"{m.kind}.{m.group}" if m.group else m.kind


def _split(value: str | None) -> set[str]:
    return {v for v in (value or "").split(",") if v}


async def read_parent(member: MemberApply, applyset: ApplySet) -> tuple[set[str], set[str]]:
    """The parent's recorded group-kinds and namespaces (empty if there is no parent yet).

    Raises:
        DeliveryError: The parent exists but belongs to another ApplySet tool (e.g. kubectl).
    """
    try:
        parent = await kube.get(member.client, kube.CONFIG_MAPS, applyset.name, applyset.namespace)
    except kube.NotFoundError:
        return set(), set()
    meta = objects.meta(parent)
    tooling = (meta.get("annotations") or {}).get(APPLYSET_TOOLING, "")
    if tooling and not tooling.startswith("cluster-inventory/"):
        raise DeliveryError(
            f"ConfigMap {applyset.namespace}/{applyset.name} is the parent of an ApplySet "
            f"managed by {tooling}; choose another --applyset name"
        )
    annotations = meta.get("annotations") or {}
    return _split(annotations.get(APPLYSET_GROUP_KINDS)), _split(
        annotations.get(APPLYSET_NAMESPACES)
    )


async def write_parent(
    member: MemberApply, applyset: ApplySet, group_kinds: set[str], namespaces: set[str]
) -> None:
    body = {
        "metadata": {
            "name": applyset.name,
            "namespace": applyset.namespace,
            "labels": {APPLYSET_ID_LABEL: applyset.id},
            "annotations": {
                APPLYSET_TOOLING: TOOLING,
                APPLYSET_GROUP_KINDS: ",".join(sorted(group_kinds)),
                APPLYSET_NAMESPACES: ",".join(sorted(namespaces - {applyset.namespace})),
            },
        }
    }
    await kube.apply(
        member.client,
        kube.CONFIG_MAPS,
        body,
        field_manager=member.options.field_manager,
        force=True,
    )


async def prune(
    member: MemberApply,
    applyset: ApplySet,
    group_kinds: set[str],
    namespaces: set[str],
    keep: set[tuple[str, str, str, str]],
) -> None:
    for group_kind in sorted(group_kinds):
        try:
            resource = await _resource_of_group_kind(member.client, group_kind)
        except kube.KindNotFoundError:
            continue  # the kind is gone from the member, and its objects with it
        scopes: list[str | None] = [*sorted(namespaces)] if resource.namespaced else [None]
        for ns in scopes:
            listed = await kube.list_objects(
                member.client, resource, ns, label_selector=f"{APPLYSET_PART_OF}={applyset.id}"
            )
            for obj in listed.get("items") or ():
                meta = objects.meta(obj)
                name, namespace = str(meta.get("name")), str(meta.get("namespace") or "")
                if (resource.group, resource.kind, namespace, name) in keep:
                    continue
                group = f".{resource.group}" if resource.group else ""
                ref = f"{resource.kind.lower()}{group}/{name}"
                key = f"prune {object_key(obj)} {resource.kind}"
                if member.options.dry_run:
                    member.row(key, ref, namespace, "pruned", "server dry run: would be deleted")
                    continue
                body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
                if meta.get("uid"):
                    body["preconditions"] = {"uid": meta["uid"]}
                try:
                    await kube.request(
                        member.client,
                        "DELETE",
                        resource.path(namespace or None, name),
                        body=body,
                        target=resource.describe(namespace or None, name),
                    )
                except kube.NotFoundError:
                    pass
                except kube.KubeAPIError as exc:
                    member.row(key, ref, namespace, "failed", f"prune: {api_message(exc)}")
                    continue
                member.row(key, ref, namespace, "pruned")
