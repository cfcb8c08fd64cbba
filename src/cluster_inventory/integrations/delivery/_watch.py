"""``apply --watch``: a manifest set kept applied on every cluster a fleet manager engages."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_DELIVERY
from cluster_inventory.integrations.delivery._applyset import FIELD_MANAGER
from cluster_inventory.integrations.delivery._manifests import Manifest
from cluster_inventory.integrations.delivery._member import ApplyOptions, crd_kinds, member_apply
from cluster_inventory.integrations.delivery._member_pass import apply_member
from cluster_inventory.integrations.delivery._results import ObjectResult
from cluster_inventory.runtime import EngagedCluster, FleetManager, Reconciler, Request, Result

__all__ = ["FleetDelivery", "ReportHook"]

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
        # A member's objects are ours to keep: take their fields back from any other manager.
        self._options = ApplyOptions(
            field_manager=field_manager, force_conflicts=True, default_namespace=default_namespace
        )
        defined = crd_kinds(self.manifests)
        watched: dict[tuple[str, str | None], list[Manifest]] = {}
        for m in self.manifests:
            if (m.group, m.kind) not in defined:
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
            meta = m.meta
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

    async def _engaged(self, cluster: EngagedCluster) -> None:
        self.state[cluster.name] = {}
        cluster.run(self._keep_applied(cluster))

    async def _disengaged(self, cluster: EngagedCluster) -> None:
        self.state.pop(cluster.name, None)

    async def _keep_applied(self, cluster: EngagedCluster) -> None:
        while True:
            member = member_apply(
                cluster.client,
                self.manifests,
                cluster=cluster.name,
                server=cluster.access.server,
                options=self._options,
            )
            await apply_member(member, self._manifests(), None)
            self._record(cluster.name, member.results(self.manifests))
            await asyncio.sleep(self.resync)

    def _reconciler(self, wanted: Mapping[tuple[str, str], Manifest]) -> Reconciler:
        async def reconcile(request: Request, cluster: EngagedCluster) -> Result | None:
            found = wanted.get((request.namespace, request.name)) or wanted.get(("", request.name))
            if found is None:
                return None
            labelled = next(m for m in self._manifests() if m.source == found.source)
            member = member_apply(
                cluster.client,
                [labelled],
                cluster=cluster.name,
                server=cluster.access.server,
                options=self._options,
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
