"""One apply pass on one member: the manifests in phases, then ApplySet pruning."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from cluster_inventory import kube
from cluster_inventory.integrations.delivery._applyset import ApplySet
from cluster_inventory.integrations.delivery._manifests import CRD_KIND, Manifest, apply_order
from cluster_inventory.integrations.delivery._member import ApplyOptions, MemberApply, member_apply
from cluster_inventory.integrations.delivery._prune import (
    group_kind,
    prune,
    read_parent,
    write_parent,
)
from cluster_inventory.integrations.delivery._results import ObjectResult

__all__ = ["apply_member", "apply_to_member"]


async def apply_member(
    member: MemberApply, manifests: Sequence[Manifest], applyset: ApplySet | None
) -> None:
    """Apply ``manifests`` to one member in phases, then prune the ApplySet if given."""
    default_namespace = member.options.default_namespace
    group_kinds = {group_kind(m) for m in manifests}
    namespaces = {
        m.namespace or default_namespace for m in manifests if m.kind not in (CRD_KIND, "Namespace")
    }
    old_kinds: set[str] = set()
    old_namespaces: set[str] = set()
    if applyset is not None:
        old_kinds, old_namespaces = await read_parent(member, applyset)
        if (
            not member.options.dry_run
        ):  # record the union first: an interrupted run still prunes later
            await write_parent(
                member, applyset, old_kinds | group_kinds, old_namespaces | namespaces
            )
    for phase in apply_order(manifests):
        await member.read_phase(phase)
        await asyncio.gather(*(member.apply(m, applyset) for m in phase))
    if applyset is None or any(r.failed for r in member.rows.values()):
        return
    keep = set()
    for m in manifests:
        resource = member.kinds.get(f"{m.api_version}/{m.kind}")
        if resource is not None:
            ns = (m.namespace or default_namespace) if resource.namespaced else ""
            keep.add((resource.group, resource.kind, ns, m.name))
    await prune(member, applyset, old_kinds | group_kinds, old_namespaces | namespaces, keep)
    if not member.options.dry_run and not any(r.failed for r in member.rows.values()):
        await write_parent(member, applyset, group_kinds, namespaces)


async def apply_to_member(
    client: kube.ApiClient,
    manifests: Sequence[Manifest],
    *,
    cluster: str,
    server: str = "",
    options: ApplyOptions | None = None,
    applyset: ApplySet | None = None,
) -> list[ObjectResult]:
    """Apply ``manifests`` to one member in phases; one result per object (and per pruned one).

    Args:
        client: The member's API client.
        manifests: What to apply.
        cluster: The member's name in results (``namespace/name`` of its profile).
        server: Its API server URL, for results.
        options: How to apply (field manager, dry run, conflicts, default namespace, no-op
            skipping); default :class:`ApplyOptions`.
        applyset: Prune objects of this ApplySet that are no longer in ``manifests``.

    Returns:
        Results in apply order, pruned objects last. An unreachable member fails every row
        with the transport error; a refused object fails its row with the server's message.

    Raises:
        KubeAPIError: Reading or writing the ApplySet parent was refused.
        DeliveryError: The ApplySet parent belongs to another tool.
    """
    member = member_apply(client, manifests, cluster=cluster, server=server, options=options)
    await apply_member(member, manifests, applyset)
    return member.results(manifests)
