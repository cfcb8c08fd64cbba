"""The placement scheduler: keep PlacementDecisions in step with Placements and profiles.

A controller on the hub in client-go's shape: informers on ``Placement`` (our request CRD,
``cluster-inventory.dev/v1alpha1``), ``ClusterProfile`` and ``PlacementDecision`` feed one
work queue keyed by placement; a reconcile reads all three from the caches, calls the pure
:func:`~cluster_inventory.integrations.placement.choice.choose` and
:func:`~cluster_inventory.integrations.placement.decisions.render_slices`, and writes only
what :func:`~cluster_inventory.integrations.placement.decisions.plan_writes` says differs
(server-side apply with a fixed field manager; deletes carry the slice's uid as a
precondition). A profile change queues the placements of its namespace only when something a
placement reads changed (labels, properties, health, deletion), so a status heartbeat costs
nothing. When a placement goes, its slices go. Slices of another scheduler are never
written or deleted; a name clash is reported in the placement's status instead.

The status says how many clusters were chosen and why the others were not, with two
conditions: ``Scheduled`` (decisions written; ``InvalidSpec``, ``DecisionConflict``) and
``Satisfied`` (as many clusters as asked for).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    FIELD_MANAGER_PLACEMENT as FIELD_MANAGER,
)
from cluster_inventory.api.constants import LABEL_DECISION_KEY
from cluster_inventory.api.views import format_time
from cluster_inventory.controller import Controller, Result
from cluster_inventory.integrations.placement.choice import (
    Candidate,
    Choice,
    choose,
    spec_from_object,
)
from cluster_inventory.integrations.placement.decisions import (
    PLACEMENT_GROUP,
    PLACEMENT_KIND,
    PLACEMENT_PLURAL,
    SCHEDULER_NAME,
    WritePlan,
    decision_key,
    plan_writes,
    refs_of,
    render_slices,
)
from cluster_inventory.integrations.placement.selectors import SelectorError
from cluster_inventory.kube.informer import DELETED, Informer, object_key

__all__ = ["FIELD_MANAGER", "PLACEMENTS", "PlacementScheduler", "placement_status"]

#: The placement request resource.
PLACEMENTS = kube.Resource(
    group=PLACEMENT_GROUP, version="v1alpha1", plural=PLACEMENT_PLURAL, kind=PLACEMENT_KIND
)
_CONTROLLER = "placement"
_EXAMPLES = 10
_log = logging.getLogger("cluster_inventory.integrations.placement")


def _condition(
    kind: str, ok: bool, reason: str, message: str, generation: int, previous: Sequence[Any]
) -> dict[str, Any]:
    status = "True" if ok else "False"
    old = next((c for c in previous if c.get("type") == kind), None)
    since = (
        old["lastTransitionTime"]
        if old is not None and old.get("status") == status and old.get("lastTransitionTime")
        else format_time(utcnow())
    )
    return {
        "type": kind,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def _left_out(choice: Choice) -> str:
    parts = [f"{len(refs)} {reason}" for reason, refs in choice.excluded.items()]
    return f"; left out: {', '.join(parts)}" if parts else ""


def placement_status(
    placement: Mapping[str, Any],
    *,
    choice: Choice | None,
    slices: Sequence[str],
    error: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The ``status`` of a placement after a reconcile. Pure (but for transition times).

    Args:
        placement: The Placement object (its previous status keeps transition times).
        choice: The choice made, or None when none could be made.
        slices: Names of the decision slices written.
        error: ``(reason, message)`` when decisions could not be written.

    Returns:
        The new status.
    """
    meta = objects.meta(placement)
    generation = int(meta.get("generation") or 0)
    previous = objects.status(placement).get("conditions") or []
    name = str(meta.get("name"))
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "decisionKey": decision_key(name),
    }
    if error is not None:
        scheduled = _condition("Scheduled", False, error[0], error[1], generation, previous)
    else:
        scheduled = _condition(
            "Scheduled",
            True,
            "DecisionsWritten",
            f"{len(slices)} PlacementDecision slice(s) with decision-key {decision_key(name)}",
            generation,
            previous,
        )
    conditions = [scheduled]
    if choice is not None:
        status["numberOfSelectedClusters"] = len(choice.chosen)
        status["decisions"] = list(slices)
        status["excluded"] = [
            {
                "reason": reason,
                "count": len(refs),
                "clusters": [ref.name for ref in refs[:_EXAMPLES]],
            }
            for reason, refs in choice.excluded.items()
        ]
        if choice.requested is None:
            wanted = "every qualifying cluster"
            reason = "ClustersChosen" if choice.chosen else "NoClusterQualifies"
        else:
            wanted = f"{choice.requested} requested"
            reason = "AllRequestedChosen" if choice.satisfied else "NotEnoughClusters"
        message = f"{len(choice.chosen)} cluster(s) chosen ({wanted}){_left_out(choice)}"
        conditions.append(
            _condition("Satisfied", choice.satisfied, reason, message, generation, previous)
        )
    status["conditions"] = conditions
    return status


def _owner_names(decision: Mapping[str, Any]) -> set[str]:
    meta = objects.meta(decision)
    names = {
        str(o.get("name"))
        for o in meta.get("ownerReferences") or ()
        if o.get("kind") == PLACEMENT_KIND
        and str(o.get("apiVersion", "")).startswith(PLACEMENT_GROUP)
    }
    key = (meta.get("labels") or {}).get(LABEL_DECISION_KEY)
    if key:
        names.add(str(key))
    return names


def _by_namespace(obj: dict[str, Any]) -> list[str]:
    return [str(objects.meta(obj).get("namespace"))]


class PlacementScheduler(Controller[str]):
    """Schedule every ``Placement`` of the watched namespaces into PlacementDecisions.

    Args:
        hub: API client of the hub (the caller closes it).
        namespaces: Inventory namespaces to serve; None for all.
        scheduler_name: ``schedulerName`` written on (and owning) the decisions.
        workers: Placements reconciled at once.
        max_per_slice: Decisions per slice (KEP-5313: at most 100).
        registry: Prometheus registry of the work queue and reconcile metrics.
        name: Name for logs and the work queue metrics.

    Attributes:
        writes: Write requests sent so far (decision applies and deletes, status applies);
            an unchanged world costs none.
        reconciles: Reconciles finished so far (whatever their outcome).
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        *,
        namespaces: Sequence[str] | None = None,
        scheduler_name: str = SCHEDULER_NAME,
        workers: int = 4,
        max_per_slice: int = 100,
        registry: CollectorRegistry = REGISTRY,
        name: str = "placement",
    ) -> None:
        super().__init__(name, self.reconcile, workers=workers, registry=registry, log=_log)
        self.hub = hub
        self.scheduler_name = scheduler_name
        self.writes = 0
        self.reconciles = 0
        self._max = max_per_slice
        scopes = list(namespaces) if namespaces is not None else [None]
        cache = kube.InformerCache.for_client(hub)
        self._placements = cache.informer(PLACEMENTS, namespaces=scopes, name=f"{name} Placement")
        self._profiles = cache.informer(
            kube.CLUSTER_PROFILES, namespaces=scopes, name=f"{name} ClusterProfile"
        )
        self._decisions = cache.informer(
            kube.PLACEMENT_DECISIONS, namespaces=scopes, name=f"{name} decisions"
        )
        for informer in (self._placements, self._profiles, self._decisions):
            informer.add_indexer("namespace", _by_namespace)
        self.watch(self._placements, lambda _, obj, __: [object_key(obj)])
        self.watch(self._profiles, self._placements_of_profile)
        self.watch(self._decisions, self._placements_of_decision)

    # -- events ----------------------------------------------------------------------
    @staticmethod
    def _all(informer: kube.NamespacedInformer, namespace: str) -> list[dict[str, Any]]:
        return informer.by_index("namespace", namespace)

    def _placements_of_profile(
        self, event: str, profile: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        if (
            event != DELETED
            and old is not None
            and Candidate.from_profile(old) == Candidate.from_profile(profile)
        ):
            return []  # nothing a placement reads changed
        namespace = str(objects.meta(profile).get("namespace"))
        return [object_key(p) for p in self._all(self._placements, namespace)]

    def _placements_of_decision(
        self, _: str, decision: dict[str, Any], __: dict[str, Any] | None
    ) -> list[str]:
        namespace = str(objects.meta(decision).get("namespace"))
        return [f"{namespace}/{name}" for name in _owner_names(decision)]

    # -- reconcile -------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result | None:
        """Bring the decisions and status of placement ``key`` (``namespace/name``) in line.

        Raises:
            KubeAPIError: A write was refused (the work queue retries with backoff).
        """
        try:
            return await self._reconcile(key)
        finally:
            self.reconciles += 1

    async def _reconcile(self, key: str) -> Result | None:
        namespace, _, name = key.partition("/")
        placement = self._placements.get(key)
        stored = self._all(self._decisions, namespace)
        if placement is None:
            await self._delete_slices(namespace, name, stored)
            return None
        uid = str(objects.meta(placement).get("uid") or "")
        try:
            spec = spec_from_object(placement)
        except SelectorError as exc:
            await self._write_status(
                placement,
                placement_status(
                    placement, choice=None, slices=(), error=("InvalidSpec", str(exc))
                ),
            )
            return None
        mine = [
            d
            for d in stored
            if d.get("schedulerName") == self.scheduler_name
            and objects.meta(d).get("labels", {}).get(LABEL_DECISION_KEY) == decision_key(name)
        ]
        choice = choose(
            spec,
            (Candidate.from_profile(p) for p in self._all(self._profiles, namespace)),
            previous=refs_of(mine),
            placement=name,
        )
        wanted = render_slices(
            placement, choice, scheduler_name=self.scheduler_name, max_per_slice=self._max
        )
        plan = plan_writes(wanted, stored, placement_uid=uid, scheduler_name=self.scheduler_name)
        names = [objects.meta(w)["name"] for w in wanted]
        if plan.conflicts:
            message = (
                f"PlacementDecision {', '.join(plan.conflicts)} in {namespace} belongs to "
                "another scheduler; rename the placement or remove that decision"
            )
            status = placement_status(
                placement, choice=choice, slices=(), error=("DecisionConflict", message)
            )
        else:
            await self._write(namespace, plan)
            status = placement_status(placement, choice=choice, slices=names)
        await self._write_status(placement, status)
        return None

    async def _write(self, namespace: str, plan: WritePlan) -> None:
        # New and changed slices first, surplus ones after: a consumer grouping by revision
        # sees the old set until the new one is complete.
        for body in plan.apply:
            self.writes += 1
            await kube.apply(
                self.hub, kube.PLACEMENT_DECISIONS, body, field_manager=FIELD_MANAGER, force=True
            )
        for name, uid in plan.delete:
            await self._delete(namespace, name, uid)

    async def _delete(self, namespace: str, name: str, uid: str) -> None:
        self.writes += 1
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid:
            body["preconditions"] = {"uid": uid}  # type: ignore[assignment]
        try:
            await kube.request(
                self.hub,
                "DELETE",
                kube.PLACEMENT_DECISIONS.path(namespace, name),
                body=body,
                target=kube.PLACEMENT_DECISIONS.describe(namespace, name),
            )
        except (kube.NotFoundError, kube.ConflictError):
            pass  # gone already, or replaced by a newer object that is not ours to delete

    async def _delete_slices(
        self, namespace: str, name: str, stored: Sequence[Mapping[str, Any]]
    ) -> None:
        key = decision_key(name)
        for decision in stored:
            meta = objects.meta(decision)
            if (
                decision.get("schedulerName") == self.scheduler_name
                and (meta.get("labels") or {}).get(LABEL_DECISION_KEY) == key
            ):
                await self._delete(namespace, str(meta.get("name")), str(meta.get("uid") or ""))

    async def _write_status(self, placement: Mapping[str, Any], status: dict[str, Any]) -> None:
        if placement.get("status") == status:
            return
        meta = objects.meta(placement)
        self.writes += 1
        try:
            await kube.apply(
                self.hub,
                PLACEMENTS,
                {
                    "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
                    "status": status,
                },
                field_manager=FIELD_MANAGER,
                subresource="status",
                force=True,
            )
        except kube.NotFoundError:
            pass  # deleted meanwhile; its delete event cleans up

    # -- lifecycle -------------------------------------------------------------------
    def informers(self) -> list[Informer | kube.NamespacedInformer]:
        """Decisions, profiles, then placements (a placement is judged on full caches)."""
        return [self._decisions, self._profiles, self._placements]

    def describe(self, key: str) -> dict[str, str]:
        """Log fields of one reconcile."""
        return {"placement": key}
