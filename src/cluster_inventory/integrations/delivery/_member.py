"""Applying a manifest set to one member cluster: results per object, ApplySet pruning."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.integrations.delivery._applyset import (
    APPLYSET_GROUP_KINDS,
    APPLYSET_ID_LABEL,
    APPLYSET_NAMESPACES,
    APPLYSET_PART_OF,
    APPLYSET_TOOLING,
    FIELD_MANAGER,
    TOOLING,
    ApplySet,
)
from cluster_inventory.integrations.delivery._manifests import CRD_KIND, Manifest, apply_order
from cluster_inventory.integrations.delivery._noop import apply_is_noop, comparable
from cluster_inventory.kube.informer import object_key

Action = Literal["created", "configured", "unchanged", "pruned", "failed"]


#: Requests in flight per member, and in all. Few per member when many members are in
#: flight: every parallel request to a server holds a TLS connection of its own (HTTP/1.1;
#: kubectl multiplexes one HTTP/2 connection), and handshakes cost more CPU than the
#: applies. Profiles of one member share their client's connections (:class:`_SharedClients`).
PER_MEMBER_REQUESTS = 8


class DeliveryError(Exception):
    """The targets cannot be selected (no such profile, no decision, a decision in flux)."""


@dataclass(frozen=True, kw_only=True)
class ObjectResult:
    """What happened to one object on one member (one row of ``cluster-inventory apply``).

    Attributes:
        cluster: The member: its ClusterProfile's ``namespace/name``.
        object: kubectl's ``kind[.group]/name``.
        namespace: The object's namespace on the member ("" if cluster-scoped).
        action: created, configured, unchanged, pruned or failed.
        message: Why it failed (the API server's message), or a note.
        server: The member's API server URL ("" if unknown).
    """

    cluster: str
    object: str
    namespace: str
    action: Action
    message: str = ""
    server: str = ""

    @property
    def failed(self) -> bool:
        """True for ``failed``."""
        return self.action == "failed"

    def to_dict(self) -> dict[str, str]:
        """The JSON shape of ``-o json``."""
        return {
            "cluster": self.cluster,
            "object": self.object,
            "namespace": self.namespace,
            "result": self.action,
            "message": self.message,
            "server": self.server,
        }


def api_message(exc: kube.KubeAPIError) -> str:
    """The API server's own message, as a result row shows it."""
    return f"{exc.message} ({exc.status} {exc.reason})" if exc.status else exc.message


@dataclass(frozen=True, kw_only=True)
class ApplyOptions:
    """How a pass applies: the ``kubectl apply --server-side`` settings it mirrors.

    Attributes:
        field_manager: Server-side apply field manager.
        dry_run: ``dryRun=All``: nothing is stored or deleted.
        force_conflicts: Take fields that another manager owns (kubectl's
            ``--force-conflicts``); otherwise such a conflict fails the object.
        default_namespace: Namespace of namespaced objects that name none.
        skip_unchanged: Send no apply for an object it could not change
            (:func:`apply_is_noop`); False sends every apply, as kubectl does.
    """

    field_manager: str = FIELD_MANAGER
    dry_run: bool = False
    force_conflicts: bool = False
    default_namespace: str = "default"
    skip_unchanged: bool = True


def crd_kinds(manifests: Iterable[Manifest]) -> set[tuple[str, str]]:
    """``(group, kind)`` of each kind that a CustomResourceDefinition in ``manifests`` defines."""
    out = set()
    for m in manifests:
        if m.kind == CRD_KIND:
            spec = objects.spec(m.obj)
            out.add((str(spec.get("group")), str((spec.get("names") or {}).get("kind"))))
    return out


def _gate() -> asyncio.Semaphore:
    return asyncio.Semaphore(PER_MEMBER_REQUESTS)


@dataclass(kw_only=True, eq=False)
class MemberApply:
    """One member's apply: kind resolution cache, row bookkeeping, the request gate.

    Attributes:
        client: The member's API client.
        cluster: The member's name in results (``namespace/name`` of its profile).
        server: Its API server URL, for results.
        options: How to apply.
        crd_kinds: Kinds the set's CRDs define (waited for until served).
        gate: Bounds this member's requests in flight.
        kinds: Kinds resolved on this member's API server (shared by clients of one server).
        stored: (collection path) -> {name: stored object}, read by :meth:`read_phase`.
        rows: One result per object key.
        unreachable: Set once the member did not answer: later objects fail at once with it.
    """

    client: kube.ApiClient
    cluster: str
    server: str = ""
    options: ApplyOptions = field(default_factory=ApplyOptions)
    crd_kinds: set[tuple[str, str]] = field(default_factory=set)
    gate: asyncio.Semaphore = field(default_factory=_gate)
    kinds: dict[str, kube.Resource] = field(default_factory=dict)
    stored: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rows: dict[str, ObjectResult] = field(default_factory=dict)
    unreachable: str = ""

    def row(self, key: str, obj: str, namespace: str, action: Action, message: str = "") -> None:
        self.rows[key] = ObjectResult(
            cluster=self.cluster,
            object=obj,
            namespace=namespace,
            action=action,
            message=message,
            server=self.server,
        )

    async def resource(self, m: Manifest, deadline_wait: float = 15.0) -> kube.Resource:
        kind = f"{m.api_version}/{m.kind}"
        if kind in self.kinds:
            return self.kinds[kind]
        waited = time.monotonic() + deadline_wait
        while True:
            try:
                found = await kube.resolve_kind(self.client, kind)
                break
            except kube.KindNotFoundError:
                # A CRD applied a moment ago is served once Established.
                if (m.group, m.kind) not in self.crd_kinds or self.options.dry_run:
                    raise
                if time.monotonic() > waited:
                    raise
                await asyncio.sleep(0.1)
        self.kinds[kind] = found
        return found

    def body(
        self, m: Manifest, resource: kube.Resource, applyset: ApplySet | None
    ) -> dict[str, Any]:
        meta = dict(m.meta)
        if resource.namespaced:
            meta["namespace"] = m.namespace or self.options.default_namespace
        else:
            meta.pop("namespace", None)
        if applyset is not None:
            meta["labels"] = {**(meta.get("labels") or {}), APPLYSET_PART_OF: applyset.id}
        return {**m.obj, "metadata": meta}

    def results(self, manifests: Sequence[Manifest]) -> list[ObjectResult]:
        """Rows in apply order (phases, then file order), pruned objects last."""
        order = [m.source for phase in apply_order(manifests) for m in phase]
        first = [self.rows[k] for k in order if k in self.rows]
        return first + [r for k, r in self.rows.items() if k not in set(order)]

    def failing(self, manifests: Sequence[Manifest], message: str) -> list[ObjectResult]:
        """Fail every object without a row yet with ``message``; all rows, in order."""
        for m in manifests:
            if m.source not in self.rows:
                self.row(m.source, m.ref(), m.namespace or "", "failed", message)
        return self.results(manifests)

    def refused(self, key: str, obj: str, namespace: str, exc: kube.KubeAPIError) -> None:
        if exc.status == 0:
            self.unreachable = self.unreachable or api_message(exc)
        self.row(key, obj, namespace, "failed", api_message(exc))

    async def read_phase(self, phase: Sequence[Manifest]) -> None:
        """Read what is stored of a phase's objects with one LIST per kind and namespace.

        The stored object tells ``unchanged`` from ``configured`` (its resourceVersion) and
        whether the apply can be skipped (:func:`apply_is_noop`); one LIST of each
        collection that holds two or more of the phase's objects replaces their GETs. A
        collection that cannot be listed (RBAC that grants ``get`` but not ``list``, a kind
        not served yet) is left to a GET per object, as is everything under dry run.
        """
        if self.options.dry_run or self.unreachable:
            return
        groups: dict[str, tuple[kube.Resource, str]] = {}
        counts: Counter[str] = Counter()
        for m in phase:
            try:
                resource = await self.resource(m)
            except kube.KubeError:
                continue  # apply() reports it
            ns = (m.namespace or self.options.default_namespace) if resource.namespaced else ""
            path = resource.path(ns or None)
            groups[path] = (resource, ns)
            counts[path] += 1

        async def read(path: str, resource: kube.Resource, ns: str) -> None:
            try:
                async with self.gate:
                    listed = await kube.list_objects(self.client, resource, ns or None)
            except kube.KubeError:
                return
            self.stored[path] = {
                str(objects.meta(item).get("name")): item for item in listed.get("items") or ()
            }

        await asyncio.gather(
            *(read(path, *groups[path]) for path, count in counts.items() if count >= 2)
        )

    async def apply(self, m: Manifest, applyset: ApplySet | None) -> None:
        if self.unreachable:
            self.row(m.source, m.ref(), m.namespace or "", "failed", self.unreachable)
            return
        try:
            resource = await self.resource(m)
        except kube.KindNotFoundError as exc:
            self.row(m.source, m.ref(), m.namespace or "", "failed", str(exc))
            return
        except kube.KubeAPIError as exc:
            self.refused(m.source, m.ref(), m.namespace or "", exc)
            return
        body = self.body(m, resource, applyset)
        ns = str(objects.meta(body).get("namespace") or "")
        listed = self.stored.get(resource.path(ns or None))
        try:
            async with self.gate:
                current: dict[str, Any] | None = None
                if listed is not None:
                    current = listed.get(m.name)
                else:
                    with contextlib.suppress(kube.NotFoundError):
                        current = await kube.get(self.client, resource, m.name, ns or None)
                if (
                    current is not None
                    and self.options.skip_unchanged
                    and not self.options.dry_run
                    and apply_is_noop(current, body, self.options.field_manager)
                ):
                    self.row(m.source, m.ref(), ns, "unchanged")
                    return
                stored = await kube.apply(
                    self.client,
                    resource,
                    body,
                    field_manager=self.options.field_manager,
                    force=self.options.force_conflicts,
                    dry_run=self.options.dry_run,
                )
        except kube.KubeAPIError as exc:
            self.refused(m.source, m.ref(), ns, exc)
            return
        if current is None:
            action: Action = "created"
        elif self.options.dry_run:
            action = "unchanged" if comparable(stored) == comparable(current) else "configured"
        else:
            version = objects.meta(stored).get("resourceVersion")
            same = version == objects.meta(current).get("resourceVersion")
            action = "unchanged" if same else "configured"
        self.row(m.source, m.ref(), ns, action, "server dry run" if self.options.dry_run else "")


async def _resource_of_group_kind(client: kube.ApiClient, group_kind: str) -> kube.Resource:
    kind, _, group = group_kind.partition(".")
    if not group:
        return await kube.resolve_kind(client, f"v1/{kind}")
    doc = await kube.request(client, "GET", f"/apis/{group}", target=f"discovery /apis/{group}")
    version = ((doc or {}).get("preferredVersion") or {}).get("version")
    if not version:
        raise kube.KindNotFoundError(f"{group_kind}: the member serves no version of {group}")
    return await kube.resolve_kind(client, f"{group}/{version}/{kind}")


def _group_kind(m: Manifest) -> str:
    return f"{m.kind}.{m.group}" if m.group else m.kind


def _split(value: str | None) -> set[str]:
    return {v for v in (value or "").split(",") if v}


async def _parent(member: MemberApply, applyset: ApplySet) -> tuple[set[str], set[str]]:
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


async def _write_parent(
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


async def _prune(
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


def member_apply(
    client: kube.ApiClient,
    manifests: Sequence[Manifest],
    *,
    cluster: str,
    server: str = "",
    options: ApplyOptions | None = None,
    parallel: int = PER_MEMBER_REQUESTS,
    kinds: dict[str, kube.Resource] | None = None,
) -> MemberApply:
    """The per-member state of one apply pass (client, limits, kinds the set defines)."""
    return MemberApply(
        client=client,
        cluster=cluster,
        server=server,
        options=options or ApplyOptions(),
        crd_kinds=crd_kinds(manifests),
        gate=asyncio.Semaphore(parallel),
        kinds={} if kinds is None else kinds,
    )


async def apply_member(
    member: MemberApply, manifests: Sequence[Manifest], applyset: ApplySet | None
) -> None:
    """Apply ``manifests`` to one member in phases, then prune the ApplySet if given."""
    default_namespace = member.options.default_namespace
    group_kinds = {_group_kind(m) for m in manifests}
    namespaces = {
        m.namespace or default_namespace for m in manifests if m.kind not in (CRD_KIND, "Namespace")
    }
    old_kinds: set[str] = set()
    old_namespaces: set[str] = set()
    if applyset is not None:
        old_kinds, old_namespaces = await _parent(member, applyset)
        if (
            not member.options.dry_run
        ):  # record the union first: an interrupted run still prunes later
            await _write_parent(
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
    await _prune(member, applyset, old_kinds | group_kinds, old_namespaces | namespaces, keep)
    if not member.options.dry_run and not any(r.failed for r in member.rows.values()):
        await _write_parent(member, applyset, group_kinds, namespaces)


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
