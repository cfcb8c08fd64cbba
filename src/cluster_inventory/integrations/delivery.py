"""Fleet delivery: server-side apply a set of manifests to every member an inventory selects.

What the Knative Operator does for one member (PEERS.md section 6), for a selection of
members: the targets are ClusterProfiles (one by name, by label selector, or the clusters a
PlacementDecision names), each member is reached through the consumer's provider file and
exec plugin (KEP-5339, :func:`cluster_inventory.credentials.connect`), and the set is
applied as ``kubectl apply --server-side`` would apply it:

- CustomResourceDefinitions first, then Namespaces, then everything else (file order within
  each phase); a kind that a CRD of the set defines is waited for until it is served;
- every object gets a result: ``created``, ``configured``, ``unchanged`` (the object did not
  change: same ``resourceVersion``; under ``dryRun`` the server's answer equals what is
  stored) or ``failed`` with the API server's own message (a 422 names the field);
- each member has its own deadline (``timeout``), so one slow or unreachable member fails
  only its own rows while the others go on; members are processed ``concurrency`` at a time;
- an object whose apply could change nothing is not sent (``skip_unchanged``, on by
  default): the stored object already holds every value of the manifest, this field manager
  owns no field the manifest left out, and it last applied at the same apiVersion
  (:func:`apply_is_noop`). Anything else -- drift, a removed field, another manager's
  change, a value the server normalises -- is applied as kubectl would.

With an :class:`ApplySet`, objects removed from the set are removed from the member, and
only those: kubectl's ApplySet convention (KEP-3659). A parent ConfigMap on the member holds
the ``applyset.kubernetes.io/id`` label and the group-kinds and namespaces the set has used;
every member object carries ``applyset.kubernetes.io/part-of``; after a successful apply,
objects labelled part of the set but no longer in it are deleted (with their uid as a
precondition). A member where any apply failed is not pruned.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from cluster_inventory import __version__, _yaml, kube
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialsError,
    ProviderConfig,
    connect_access,
    load_provider_file,
    resolve_access,
)
from cluster_inventory.kube.informer import object_key
from cluster_inventory.runtime import Cluster, FleetManager, Reconciler, Request, Result
from cluster_inventory.runtime.decisions import read_decisions

__all__ = [
    "APPLYSET_ID_LABEL",
    "APPLYSET_PART_OF",
    "FIELD_MANAGER",
    "LABEL_DELIVERY",
    "Action",
    "ApplySet",
    "DeliveryError",
    "FleetDelivery",
    "Manifest",
    "ManifestError",
    "ObjectResult",
    "apply_is_noop",
    "apply_order",
    "apply_to_member",
    "deliver",
    "load_manifests",
    "results_json",
    "select_profiles",
]

#: Default field manager of ``cluster-inventory apply``.
FIELD_MANAGER = "cluster-inventory-apply"
#: KEP-3659 names (kubectl's ``applyset.kubernetes.io/...``).
APPLYSET_ID_LABEL = "applyset.kubernetes.io/id"
APPLYSET_PART_OF = "applyset.kubernetes.io/part-of"
APPLYSET_TOOLING = "applyset.kubernetes.io/tooling"
APPLYSET_GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
APPLYSET_NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
TOOLING = f"cluster-inventory/v{__version__}"

Action = Literal["created", "configured", "unchanged", "pruned", "failed"]
_CRD_KIND = "CustomResourceDefinition"
#: Requests in flight per member, and in all. Few per member when many members are in
#: flight: every parallel request to a server holds a TLS connection of its own (HTTP/1.1;
#: kubectl multiplexes one HTTP/2 connection), and handshakes cost more CPU than the
#: applies. Profiles of one member share their client's connections (:class:`_SharedClients`).
_PER_MEMBER_REQUESTS = 8
_IN_FLIGHT = 64
_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A manifest cannot be read; the message names the file, the document and the field.

    Attributes:
        source: The file and document, e.g. ``app.yaml#2`` (``-`` is standard input).
        field: The field at fault (``kind``, ``metadata.name``), or ``(file)``/``(document)``.
    """

    def __init__(self, source: str, problem: str, *, field: str = "(document)") -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.field = field


class DeliveryError(Exception):
    """The targets cannot be selected (no such profile, no decision, a decision in flux)."""


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """One object to apply and where it came from (``file#document``, from 1)."""

    obj: dict[str, Any]
    source: str

    @property
    def api_version(self) -> str:
        """``apiVersion``."""
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        """``kind``."""
        return str(self.obj["kind"])

    @property
    def group(self) -> str:
        """API group ("" for core)."""
        return self.api_version.rpartition("/")[0]

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` as written, or None."""
        return self.obj["metadata"].get("namespace") or None

    def ref(self) -> str:
        """The ``kind[.group]/name`` kubectl prints, e.g. ``deployment.apps/web``."""
        group = f".{self.group}" if self.group else ""
        return f"{self.kind.lower()}{group}/{self.name}"


def _documents(text: str, source: str) -> list[tuple[str, Any]]:
    try:
        docs = _yaml.load_all(text)
    except yaml.YAMLError as exc:
        raise ManifestError(source, _yaml.describe(exc), field="(file)") from None
    return [(f"{source}#{i}", doc) for i, doc in enumerate(docs, start=1) if doc is not None]


def _manifest(where: str, doc: Any) -> list[Manifest]:
    if not isinstance(doc, dict):
        raise ManifestError(where, f"a manifest must be a mapping, not {type(doc).__name__}")
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise ManifestError(where, f"{key} is missing", field=key)
    if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
        out = []
        for i, item in enumerate(doc["items"]):
            out += _manifest(f"{where} items[{i}]", item)
        return out
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ManifestError(
            where,
            f"{doc['kind']} has no metadata.name (generateName cannot be applied)",
            field="metadata.name",
        )
    if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
        raise ManifestError(
            where, "metadata.namespace must be a string", field="metadata.namespace"
        )
    return [Manifest(obj=doc, source=where)]


def load_manifests(paths: Sequence[str | Path], *, stdin: TextIO | None = None) -> list[Manifest]:
    """Read manifests as ``kubectl apply -f`` does.

    Args:
        paths: Files, directories (their ``.yaml``, ``.yml`` and ``.json`` files, sorted, not
            recursive) or ``-`` for standard input. YAML streams may hold many documents;
            a ``...List`` document contributes its items.
        stdin: What ``-`` reads (default: ``sys.stdin``).

    Returns:
        The objects in the order read.

    Raises:
        ManifestError: A path is missing, a document is not valid YAML, lacks ``apiVersion``,
            ``kind`` or ``metadata.name``, or two documents name the same object.
    """
    out: list[Manifest] = []
    for raw in paths:
        if str(raw) == "-":
            out += [
                m for w, d in _documents((stdin or sys.stdin).read(), "-") for m in _manifest(w, d)
            ]
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in _SUFFIXES and p.is_file())
        elif path.exists():
            files = [path]
        else:
            raise ManifestError(str(path), "no such file or directory", field="(file)")
        for file in files:
            try:
                text = file.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(str(file), f"cannot read: {exc}", field="(file)") from None
            out += [m for w, d in _documents(text, str(file)) for m in _manifest(w, d)]
    seen: dict[tuple[str, str, str | None, str], str] = {}
    for m in out:
        key = (m.group, m.kind, m.namespace, m.name)
        if key in seen:
            raise ManifestError(
                m.source, f"{m.ref()} is also defined in {seen[key]}", field="metadata.name"
            )
        seen[key] = m.source
    return out


def apply_order(manifests: Iterable[Manifest]) -> list[list[Manifest]]:
    """Phases of an apply: CRDs, then Namespaces, then the rest; file order within each.

    Empty phases are left out.
    """
    phases: list[list[Manifest]] = [[], [], []]
    for m in manifests:
        if m.kind == _CRD_KIND and m.group == "apiextensions.k8s.io":
            phases[0].append(m)
        elif m.kind == "Namespace" and m.group == "":
            phases[1].append(m)
        else:
            phases[2].append(m)
    return [p for p in phases if p]


@dataclass(frozen=True, kw_only=True)
class ApplySet:
    """A KEP-3659 ApplySet whose parent is a ConfigMap on each member.

    Attributes:
        name: The parent ConfigMap's name.
        namespace: Its namespace on the member (must exist there).
    """

    name: str
    namespace: str

    @property
    def id(self) -> str:
        """``applyset-<base64url(sha256(name.namespace.ConfigMap.))>-v1``, kubectl's id."""
        digest = hashlib.sha256(f"{self.name}.{self.namespace}.ConfigMap.".encode()).digest()
        return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"


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


def _api_message(exc: kube.KubeAPIError) -> str:
    return f"{exc.message} ({exc.status} {exc.reason})" if exc.status else exc.message


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("managedFields", "resourceVersion", "generation")
    }
    return {**obj, "metadata": meta}


def _covers(stored: Any, wanted: Any) -> bool:
    """Whether ``stored`` holds every value of ``wanted``.

    Maps key by key (extra keys allowed), lists element by element at equal length,
    everything else equal.
    """
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(
            k in stored and _covers(stored[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(_covers(a, b) for a, b in zip(stored, wanted, strict=True))
        )
    return bool(stored == wanted)


def _owned_within(fields: Mapping[str, Any], wanted: Any) -> bool:
    """Whether every field of a ``FieldsV1`` set is in ``wanted``.

    Maps are followed; a list or a value in ``wanted`` counts as a whole.
    """
    for key, sub in fields.items():
        if key == ".":
            continue
        if not key.startswith("f:") or not isinstance(wanted, dict) or key[2:] not in wanted:
            return False
        value = wanted[key[2:]]
        if isinstance(value, dict) and isinstance(sub, dict) and not _owned_within(sub, value):
            return False
    return True


def apply_is_noop(stored: Mapping[str, Any], body: Mapping[str, Any], field_manager: str) -> bool:
    """Whether server-side applying ``body`` to ``stored`` as ``field_manager`` changes nothing.

    Server-side apply (KEP-555) sets the fields of the body and removes the fields the
    manager owned before but left out. So the apply is a no-op when all of these hold:

    - ``stored`` has an ``Apply`` entry of ``field_manager`` in ``metadata.managedFields``
      (not of a subresource) at the body's ``apiVersion``, in ``FieldsV1`` -- or the body
      sets no field at all beyond its name (then no entry is kept, and none is needed);
    - every value of the body is already stored (maps compared key by key, lists element by
      element and of equal length, so a value the server normalises or defaults inside a
      list makes it "not a no-op");
    - every field that entry owns is in the body (nothing to remove).

    It answers False whenever it cannot be sure, and then the object is applied.

    Args:
        stored: The object as the API server returned it (with ``managedFields``).
        body: The apply body (``apiVersion``, ``kind``, ``metadata`` with name, namespace).
        field_manager: The apply's field manager.

    Returns:
        True if the apply can be skipped and the object reported ``unchanged``.
    """
    meta = stored.get("metadata") or {}
    entry = next(
        (
            e
            for e in meta.get("managedFields") or ()
            if e.get("manager") == field_manager
            and e.get("operation") == "Apply"
            and not e.get("subresource")
        ),
        None,
    )
    wanted = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    if entry is None:
        # A body that sets no field (a bare ServiceAccount) leaves no entry behind: there is
        # nothing to set and nothing owned to remove.
        bare = set(wanted) <= {"metadata"} and set(wanted.get("metadata") or {}) <= {
            "name",
            "namespace",
        }
        return bare
    if entry.get("fieldsType") != "FieldsV1" or entry.get("apiVersion") != body.get("apiVersion"):
        return False
    return _covers(stored, wanted) and _owned_within(entry.get("fieldsV1") or {}, wanted)


class _Member:
    """One member's apply: kind resolution cache, row bookkeeping, the request gate."""

    def __init__(
        self,
        client: kube.ApiClient,
        cluster: str,
        server: str,
        *,
        field_manager: str,
        dry_run: bool,
        force_conflicts: bool,
        default_namespace: str,
        crd_kinds: set[tuple[str, str]],
        parallel: int = _PER_MEMBER_REQUESTS,
        kinds: dict[str, kube.Resource] | None = None,
        skip_unchanged: bool = True,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.server = server
        self.field_manager = field_manager
        self.dry_run = dry_run
        self.force = force_conflicts
        self.skip_unchanged = skip_unchanged
        self.default_namespace = default_namespace
        self.crd_kinds = crd_kinds
        self.gate = asyncio.Semaphore(parallel)
        #: Kinds resolved on this member's API server (shared by clients of one server).
        self.kinds: dict[str, kube.Resource] = {} if kinds is None else kinds
        #: (collection path) -> {name: stored object}, read by :meth:`read_phase`.
        self.stored: dict[str, dict[str, dict[str, Any]]] = {}
        self.rows: dict[str, ObjectResult] = {}
        #: Set once the member did not answer: later objects fail at once with this message.
        self.unreachable = ""

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
                if (m.group, m.kind) not in self.crd_kinds or self.dry_run:
                    raise
                if time.monotonic() > waited:
                    raise
                await asyncio.sleep(0.1)
        self.kinds[kind] = found
        return found

    def body(
        self, m: Manifest, resource: kube.Resource, applyset: ApplySet | None
    ) -> dict[str, Any]:
        meta = dict(m.obj["metadata"])
        if resource.namespaced:
            meta["namespace"] = m.namespace or self.default_namespace
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
            self.unreachable = self.unreachable or _api_message(exc)
        self.row(key, obj, namespace, "failed", _api_message(exc))

    async def read_phase(self, phase: Sequence[Manifest]) -> None:
        """Read what is stored of a phase's objects with one LIST per kind and namespace.

        The stored object tells ``unchanged`` from ``configured`` (its resourceVersion) and
        whether the apply can be skipped (:func:`apply_is_noop`); one LIST of each
        collection that holds two or more of the phase's objects replaces their GETs. A
        collection that cannot be listed (RBAC that grants ``get`` but not ``list``, a kind
        not served yet) is left to a GET per object, as is everything under dry run.
        """
        if self.dry_run or self.unreachable:
            return
        groups: dict[str, tuple[kube.Resource, str]] = {}
        counts: Counter[str] = Counter()
        for m in phase:
            try:
                resource = await self.resource(m)
            except kube.KubeError:
                continue  # apply() reports it
            ns = (m.namespace or self.default_namespace) if resource.namespaced else ""
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
                str(item["metadata"].get("name")): item
                for item in listed.get("items") or ()
                if item.get("metadata")
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
        ns = str(body["metadata"].get("namespace") or "")
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
                    and self.skip_unchanged
                    and not self.dry_run
                    and apply_is_noop(current, body, self.field_manager)
                ):
                    self.row(m.source, m.ref(), ns, "unchanged")
                    return
                stored = await kube.apply(
                    self.client,
                    resource,
                    body,
                    field_manager=self.field_manager,
                    force=self.force,
                    dry_run=self.dry_run,
                )
        except kube.KubeAPIError as exc:
            self.refused(m.source, m.ref(), ns, exc)
            return
        if current is None:
            action: Action = "created"
        elif self.dry_run:
            action = "unchanged" if _comparable(stored) == _comparable(current) else "configured"
        else:
            same = stored["metadata"].get("resourceVersion") == current["metadata"].get(
                "resourceVersion"
            )
            action = "unchanged" if same else "configured"
        self.row(m.source, m.ref(), ns, action, "server dry run" if self.dry_run else "")


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


async def _parent(member: _Member, applyset: ApplySet) -> tuple[set[str], set[str]]:
    """The parent's recorded group-kinds and namespaces (empty if there is no parent yet).

    Raises:
        DeliveryError: The parent exists but belongs to another ApplySet tool (e.g. kubectl).
    """
    try:
        parent = await kube.get(member.client, kube.CONFIG_MAPS, applyset.name, applyset.namespace)
    except kube.NotFoundError:
        return set(), set()
    meta = parent.get("metadata") or {}
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
    member: _Member, applyset: ApplySet, group_kinds: set[str], namespaces: set[str]
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
        member.client, kube.CONFIG_MAPS, body, field_manager=member.field_manager, force=True
    )


async def _prune(
    member: _Member,
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
                meta = obj.get("metadata") or {}
                name, namespace = str(meta.get("name")), str(meta.get("namespace") or "")
                if (resource.group, resource.kind, namespace, name) in keep:
                    continue
                group = f".{resource.group}" if resource.group else ""
                ref = f"{resource.kind.lower()}{group}/{name}"
                key = f"prune {object_key(obj)} {resource.kind}"
                if member.dry_run:
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
                    member.row(key, ref, namespace, "failed", f"prune: {_api_message(exc)}")
                    continue
                member.row(key, ref, namespace, "pruned")


def _member(
    client: kube.ApiClient,
    manifests: Sequence[Manifest],
    *,
    cluster: str,
    server: str = "",
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
    force_conflicts: bool = False,
    default_namespace: str = "default",
    parallel: int = _PER_MEMBER_REQUESTS,
    kinds: dict[str, kube.Resource] | None = None,
    skip_unchanged: bool = True,
) -> _Member:
    crd_kinds = set()
    for m in manifests:
        if m.kind == _CRD_KIND:
            spec = m.obj.get("spec") or {}
            crd_kinds.add((str(spec.get("group")), str((spec.get("names") or {}).get("kind"))))
    return _Member(
        client,
        cluster,
        server,
        field_manager=field_manager,
        dry_run=dry_run,
        force_conflicts=force_conflicts,
        default_namespace=default_namespace,
        crd_kinds=crd_kinds,
        parallel=parallel,
        kinds=kinds,
        skip_unchanged=skip_unchanged,
    )


async def _run(member: _Member, manifests: Sequence[Manifest], applyset: ApplySet | None) -> None:
    default_namespace = member.default_namespace
    group_kinds = {_group_kind(m) for m in manifests}
    namespaces = {
        m.namespace or default_namespace
        for m in manifests
        if m.kind not in (_CRD_KIND, "Namespace")
    }
    old_kinds: set[str] = set()
    old_namespaces: set[str] = set()
    if applyset is not None:
        old_kinds, old_namespaces = await _parent(member, applyset)
        if not member.dry_run:  # record the union first: an interrupted run still prunes later
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
    if not member.dry_run and not any(r.failed for r in member.rows.values()):
        await _write_parent(member, applyset, group_kinds, namespaces)


async def apply_to_member(
    client: kube.ApiClient,
    manifests: Sequence[Manifest],
    *,
    cluster: str,
    server: str = "",
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
    force_conflicts: bool = False,
    default_namespace: str = "default",
    applyset: ApplySet | None = None,
    skip_unchanged: bool = True,
) -> list[ObjectResult]:
    """Apply ``manifests`` to one member in phases; one result per object (and per pruned one).

    Args:
        client: The member's API client.
        manifests: What to apply.
        cluster: The member's name in results (``namespace/name`` of its profile).
        server: Its API server URL, for results.
        field_manager: Server-side apply field manager.
        dry_run: ``dryRun=All``: nothing is stored or deleted.
        force_conflicts: Take fields that another manager owns (kubectl's
            ``--force-conflicts``); otherwise such a conflict fails the object.
        default_namespace: Namespace of namespaced objects that name none.
        applyset: Prune objects of this ApplySet that are no longer in ``manifests``.
        skip_unchanged: Send no apply for an object it could not change
            (:func:`apply_is_noop`); False sends every apply, as kubectl does.

    Returns:
        Results in apply order, pruned objects last. An unreachable member fails every row
        with the transport error; a refused object fails its row with the server's message.

    Raises:
        KubeAPIError: Reading or writing the ApplySet parent was refused.
        DeliveryError: The ApplySet parent belongs to another tool.
    """
    member = _member(
        client,
        manifests,
        cluster=cluster,
        server=server,
        field_manager=field_manager,
        dry_run=dry_run,
        force_conflicts=force_conflicts,
        default_namespace=default_namespace,
        skip_unchanged=skip_unchanged,
    )
    await _run(member, manifests, applyset)
    return member.results(manifests)


def _server(profile: Mapping[str, Any]) -> str:
    for provider in (profile.get("status") or {}).get("accessProviders") or ():
        server = (provider.get("cluster") or {}).get("server")
        if server:
            return str(server)
    return ""


class _SharedClients:
    """One API client per distinct way of reaching a member, for one :func:`deliver` run.

    Profiles whose resolved access is equal -- same server, CA, TLS server name, proxy and
    exec plugin with the same cluster config (:attr:`ClusterAccess.cache_key
    <cluster_inventory.credentials.ClusterAccess>`, the key that already shares one
    credential, KEP-5339) -- reach the same API server as the same identity. They share one
    client: its keep-alive connections (instead of new TLS handshakes per profile), the
    credential and the kinds resolved on that server. Each profile still gets its own apply
    pass and result rows. A failure to connect is shared as well (the same plugin would fail
    the same way), and a profile's deadline never cancels a connect another profile awaits.
    """

    def __init__(self, providers: ProviderConfig, cache: CredentialCache) -> None:
        self._providers = providers
        self._cache = cache
        self._clients: dict[str, asyncio.Future[kube.ApiClient]] = {}
        self._kinds: dict[str, dict[str, kube.Resource]] = {}

    async def get(
        self, profile: Mapping[str, Any]
    ) -> tuple[kube.ApiClient, dict[str, kube.Resource]]:
        """The client for ``profile``'s member and the kinds resolved on its server.

        Raises:
            CredentialsError: No usable access provider, or the plugin failed.
            KubeConfigError: The CA or client certificate does not load.
        """
        access = resolve_access(profile, self._providers)
        key = access.cache_key
        pending = self._clients.get(key)
        if pending is None:
            pending = asyncio.ensure_future(connect_access(access, cache=self._cache))
            self._clients[key] = pending
        client = await asyncio.shield(pending)
        return client, self._kinds.setdefault(key, {})

    async def close(self) -> None:
        """Close every client that was made (waiting for connects still under way)."""
        for pending in self._clients.values():
            with contextlib.suppress(Exception):
                await (await pending).close()


async def _deliver_one(
    profile: Mapping[str, Any],
    manifests: Sequence[Manifest],
    clients: _SharedClients,
    timeout: float,
    options: Mapping[str, Any],
) -> list[ObjectResult]:
    cluster = object_key(profile)
    server = _server(profile)
    member: _Member | None = None

    def rows_failing_with(message: str) -> list[ObjectResult]:
        done = member or _member(None, manifests, cluster=cluster, server=server)
        return done.failing(manifests, message)

    applyset = options.get("applyset")
    settings = {k: v for k, v in options.items() if k != "applyset"}
    try:
        async with asyncio.timeout(timeout):
            client, kinds = await clients.get(profile)
            member = _member(
                client, manifests, cluster=cluster, server=server, kinds=kinds, **settings
            )
            await _run(member, manifests, applyset)
            return member.results(manifests)
    except TimeoutError:
        return rows_failing_with(f"timed out after {timeout:g} s")
    except (CredentialsError, kube.KubeError, DeliveryError) as exc:
        message = _api_message(exc) if isinstance(exc, kube.KubeAPIError) else str(exc)
        return rows_failing_with(message)


async def deliver(
    profiles: Sequence[Mapping[str, Any]],
    manifests: Sequence[Manifest],
    providers: ProviderConfig | str | Path,
    *,
    concurrency: int = 32,
    timeout: float = 60.0,
    cache: CredentialCache | None = None,
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
    force_conflicts: bool = False,
    default_namespace: str = "default",
    applyset: ApplySet | None = None,
    skip_unchanged: bool = True,
) -> list[ObjectResult]:
    """Apply ``manifests`` to the member of every profile; never raises for one member.

    Args:
        profiles: ClusterProfiles (decoded dicts) of the target members.
        manifests: What to apply.
        providers: The consumer's provider file (KEP-5339), loaded or as a path.
        concurrency: Members processed at once.
        timeout: Seconds each member gets (connect, apply, prune); its unfinished objects
            fail with "timed out" and the others are not held.
        cache: Credential cache (default: a new one for this run).
        field_manager: Server-side apply field manager.
        dry_run: Server-side dry run.
        force_conflicts: Take over fields other managers own.
        default_namespace: Namespace of namespaced objects that name none.
        applyset: Prune what left the set (KEP-3659).
        skip_unchanged: Send no apply for an object it could not change
            (:func:`apply_is_noop`); False sends every apply, as kubectl does.

    Returns:
        Every member's results, members in the order of ``profiles``.

    Raises:
        ValueError: ``concurrency`` or ``timeout`` is not positive.
    """
    if concurrency < 1 or timeout <= 0:
        raise ValueError("concurrency must be >= 1 and timeout > 0")
    cache = cache or CredentialCache()
    if not isinstance(providers, ProviderConfig):  # read the file once, not once per member
        try:
            providers = load_provider_file(Path(providers))
        except CredentialsError as exc:
            return [
                row
                for p in profiles
                for row in _member(
                    None, manifests, cluster=object_key(p), server=_server(p)
                ).failing(manifests, str(exc))
            ]
    clients = _SharedClients(providers, cache)
    gate = asyncio.Semaphore(concurrency)
    options = {
        "field_manager": field_manager,
        "dry_run": dry_run,
        "force_conflicts": force_conflicts,
        "default_namespace": default_namespace,
        "applyset": applyset,
        "skip_unchanged": skip_unchanged,
        "parallel": max(
            2, min(_PER_MEMBER_REQUESTS, _IN_FLIGHT // max(1, min(concurrency, len(profiles))))
        ),
    }

    async def one(profile: Mapping[str, Any]) -> list[ObjectResult]:
        async with gate:
            return await _deliver_one(profile, manifests, clients, timeout, options)

    try:
        per_member = await asyncio.gather(*(one(p) for p in profiles))
    finally:
        await clients.close()
    return [row for rows in per_member for row in rows]


async def select_profiles(
    hub: kube.ApiClient,
    namespace: str,
    *,
    profile: str | None = None,
    selector: str | None = None,
    placement: str | None = None,
) -> list[dict[str, Any]]:
    """The target ClusterProfiles: one by name, by label selector, or a placement's clusters.

    Exactly one of ``profile``, ``selector`` and ``placement`` is given. A placement is read
    as a consumer reads a PlacementDecision: every slice of the decision-key ``placement``
    in ``namespace``, grouped by revision
    (:func:`~cluster_inventory.runtime.decisions.read_decisions`).

    Returns:
        Profiles sorted by ``namespace/name``.

    Raises:
        DeliveryError: No such profile, no decision with that key, or the decision's slices
            are being rewritten.
        ValueError: Not exactly one way of selecting was given.
        KubeError: The hub refused or could not be reached.
    """
    if sum(x is not None for x in (profile, selector, placement)) != 1:
        raise ValueError("select with exactly one of profile, selector or placement")
    if profile is not None:
        try:
            return [await kube.get(hub, kube.CLUSTER_PROFILES, profile, namespace)]
        except kube.NotFoundError:
            raise DeliveryError(f"ClusterProfile {namespace}/{profile} not found") from None
    if selector is not None:
        listed = await kube.list_objects(
            hub, kube.CLUSTER_PROFILES, namespace, label_selector=selector
        )
        return sorted(listed.get("items") or (), key=object_key)
    assert placement is not None
    decision = await read_decisions(hub, namespace, placement)
    if not decision.found:
        raise DeliveryError(f"no PlacementDecision with decision-key {placement} in {namespace}")
    if not decision.complete:
        raise DeliveryError(
            f"the PlacementDecision slices of {placement} in {namespace} are being rewritten "
            f"(revision {decision.revision} incomplete); try again"
        )
    wanted = set(decision.clusters)
    found: dict[str, dict[str, Any]] = {}
    for ns in sorted({key.partition("/")[0] for key in wanted}):
        listed = await kube.list_objects(hub, kube.CLUSTER_PROFILES, ns)
        found.update(
            {object_key(p): p for p in listed.get("items") or () if object_key(p) in wanted}
        )
    missing = sorted(wanted - set(found))
    if missing:
        raise DeliveryError(
            f"PlacementDecision {placement} names ClusterProfiles that do not exist: "
            + ", ".join(missing)
        )
    return [found[key] for key in sorted(found)]


def results_json(results: Iterable[ObjectResult]) -> str:
    """``-o json``: a list of result objects."""
    return json.dumps([r.to_dict() for r in results], indent=2)


#: On every object :class:`FleetDelivery` applies: its field manager (the member-side watch
#: for drift selects on it).
LABEL_DELIVERY = "cluster-inventory.dev/delivery"

#: ``(cluster, rows)``: called after each apply pass or drift repair on a member.
ReportHook = Callable[[str, list[ObjectResult]], None]


class FleetDelivery:
    """Keep a manifest set applied on every cluster a fleet manager engages (``apply --watch``).

    On engagement the whole set is applied (phased, as :func:`apply_to_member`), then again
    every ``resync`` seconds while the cluster stays engaged (this retries failures and
    repairs kinds that a CRD of the set defines). Every other kind is also watched on the
    member (objects labelled ``cluster-inventory.dev/delivery=<field manager>``): an object
    edited or deleted there is put back at once, with ``force`` as a controller does. A
    cluster that leaves the fleet (deleted profile, lost health, dropped by a placement) is
    disengaged by the fleet manager and forgotten here; nothing is deleted from it.

    Args:
        fleet: The fleet manager (not yet started); choose clusters with its namespaces,
            label selector, readiness or ``placement``.
        manifests: The set.
        field_manager: Server-side apply field manager (also the label value).
        default_namespace: Namespace of namespaced objects that name none.
        resync: Seconds between full re-applies on each cluster.
        on_report: Called with each cluster's rows after every pass and repair.

    Attributes:
        state: Per engaged cluster, its latest row per object.
    """

    def __init__(
        self,
        fleet: FleetManager,
        manifests: Sequence[Manifest],
        *,
        field_manager: str = FIELD_MANAGER,
        default_namespace: str = "default",
        resync: float = 300.0,
        on_report: ReportHook | None = None,
    ) -> None:
        if resync <= 0:
            raise ValueError("resync must be > 0 seconds")
        self.manifests = list(manifests)
        self.field_manager = field_manager
        self.default_namespace = default_namespace
        self.resync = resync
        self.on_report = on_report
        self.state: dict[str, dict[str, ObjectResult]] = {}
        self._label = {LABEL_DELIVERY: field_manager[:63]}
        crd_kinds = {
            (
                str((m.obj.get("spec") or {}).get("group")),
                str(((m.obj.get("spec") or {}).get("names") or {}).get("kind")),
            )
            for m in self.manifests
            if m.kind == _CRD_KIND
        }
        watched: dict[tuple[str, str | None], list[Manifest]] = {}
        for m in self.manifests:
            if (m.group, m.kind) not in crd_kinds:
                watched.setdefault((f"{m.api_version}/{m.kind}", m.namespace), []).append(m)
        for i, ((kind, namespace), group) in enumerate(sorted(watched.items(), key=str)):
            wanted = {(m.namespace or "", m.name): m for m in group}
            fleet.add_reconciler(
                kind,
                self._reconciler(wanted),
                name=f"delivery-{i}-{kind.rsplit('/', 1)[-1].lower()}",
                namespace=namespace,
                label_selector=f"{LABEL_DELIVERY}={self._label[LABEL_DELIVERY]}",
                max_concurrent_reconciles=4,
            )
        fleet.on_engage(self._engaged)
        fleet.on_disengage(self._disengaged)

    def _manifests(self) -> list[Manifest]:
        out = []
        for m in self.manifests:
            meta = m.obj["metadata"]
            labels = {**(meta.get("labels") or {}), **self._label}
            out.append(
                Manifest(obj={**m.obj, "metadata": {**meta, "labels": labels}}, source=m.source)
            )
        return out

    def _record(self, cluster: str, rows: list[ObjectResult]) -> None:
        if cluster not in self.state:
            return  # disengaged meanwhile
        for row in rows:
            self.state[cluster][f"{row.namespace}/{row.object}"] = row
        if self.on_report is not None and rows:
            self.on_report(cluster, rows)

    async def _engaged(self, cluster: Cluster) -> None:
        self.state[cluster.name] = {}
        cluster.run(self._keep_applied(cluster))

    async def _disengaged(self, cluster: Cluster) -> None:
        self.state.pop(cluster.name, None)

    async def _keep_applied(self, cluster: Cluster) -> None:
        while True:
            member = _member(
                cluster.client,
                self.manifests,
                cluster=cluster.name,
                server=cluster.access.server,
                field_manager=self.field_manager,
                force_conflicts=True,
                default_namespace=self.default_namespace,
            )
            await _run(member, self._manifests(), None)
            self._record(cluster.name, member.results(self.manifests))
            await asyncio.sleep(self.resync)

    def _reconciler(self, wanted: Mapping[tuple[str, str], Manifest]) -> Reconciler:
        async def reconcile(request: Request, cluster: Cluster) -> Result | None:
            found = wanted.get((request.namespace, request.name)) or wanted.get(("", request.name))
            if found is None:
                return None
            labelled = next(m for m in self._manifests() if m.source == found.source)
            member = _member(
                cluster.client,
                [labelled],
                cluster=cluster.name,
                server=cluster.access.server,
                field_manager=self.field_manager,
                force_conflicts=True,
                default_namespace=self.default_namespace,
            )
            await member.apply(labelled, None)
            rows = member.results([labelled])
            if member.unreachable:
                raise kube.ServerUnavailableError(
                    status=0, reason="Unreachable", message=member.unreachable
                )
            repaired = [r for r in rows if r.action != "unchanged"]
            self._record(cluster.name, repaired)
            return None

        return reconcile

    def summary(self) -> dict[str, dict[str, int]]:
        """Per engaged cluster: how many objects are in each state."""
        return {
            cluster: dict(Counter(r.action for r in rows.values()))
            for cluster, rows in sorted(self.state.items())
        }
