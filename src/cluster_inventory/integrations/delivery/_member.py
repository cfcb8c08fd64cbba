"""Applying a manifest set to one member cluster: its apply state and the apply of one object.

:class:`MemberApply` holds what one member's pass shares (client, kind resolution cache, the
rows, the request gate); :mod:`._member_pass` runs it in phases and prunes the ApplySet.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.integrations.delivery._applyset import (
    APPLYSET_PART_OF,
    FIELD_MANAGER,
    ApplySet,
)
from cluster_inventory.integrations.delivery._manifests import CRD_KIND, Manifest, apply_order
from cluster_inventory.integrations.delivery._noop import apply_is_noop, comparable
from cluster_inventory.integrations.delivery._results import Action, ObjectResult, api_message

__all__ = ["PER_MEMBER_REQUESTS", "ApplyOptions", "MemberApply", "crd_kinds", "member_apply"]


#: Requests in flight per member, and in all. Few per member when many members are in
#: flight: every parallel request to a server holds a TLS connection of its own (HTTP/1.1;
#: kubectl multiplexes one HTTP/2 connection), and handshakes cost more CPU than the
#: applies. Profiles of one member share their client's connections (:class:`_SharedClients`).
PER_MEMBER_REQUESTS = 8


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
