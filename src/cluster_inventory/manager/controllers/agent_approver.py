"""The CSR approver: signs off one acceptance's certificate request, deletes what it refuses.

The hub's check of the join (``docs/agent.md``, "Who can obtain which certificate"), as OCM's
registration hub approves a klusterlet's CSR (the label is only a hint: the subject and the
requester bind the request) and stricter. One pure decision,
:func:`~cluster_inventory.manager.rules.agent_approval.csr_decision`, for every
CertificateSigningRequest that one of our identities filed (an agent's, user
``cluster-inventory:agent:NAME``; a bootstrap credential's, user
``cluster-inventory:agent-bootstrap:NAME``) or that carries the label
``cluster-inventory.dev/agent``:

- **approve** the CSR of member ``NAME`` only when its shape is exactly the agent's for one
  acceptance ``ACC`` (:func:`~cluster_inventory.api.agents.csr_shape_problem`: subject,
  usages, signer, the name ``cluster-inventory-agent-NAME-ACC``), its duration is within
  ``ManagerConfig.agent_certificate_max_seconds``, ``ACC`` is ``NAME``'s current acceptance,
  and the requester is that acceptance's **bootstrap** identity (user and groups of the
  certificate ``manager bootstrap-kubeconfig --member NAME`` issued, and only until the
  member has joined: a bootstrap credential joins once) or its **agent** (username == the
  CSR's CN, and the acceptance's group: a rotation);
- **delete**, with a Warning Event naming why, a CSR of our identities that can never be
  approved (another member's, another acceptance's, another shape, too long, a bootstrap
  after the join, more than :data:`~.agent_approval.MAX_PENDING_PER_REQUESTER` pending of
  one requester) or whose acceptance is still not current
  :data:`~.agent_approval.STALE_AFTER` seconds after it was made (a rejected member's, or one
  accepted again since);
- **leave pending**, with an Event, a labelled CSR that someone else filed (not ours to
  delete, never ours to approve); ignore every other CSR of the hub.

Each refusal is one Event on the CSR and one on the requester's registration Secret
(``manager agents`` reads those), deduped per CSR and reason. Signing is the signer's
(kube-controller-manager's ``csrsigning``). :class:`AgentApprover` is the controller around
the decision (:mod:`~cluster_inventory.manager.rules.agent_approval`, pure): every CSR of the
hub and the registration Secrets from the shared cache, keyed by CSR name.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api import objects
from cluster_inventory.api.agents import (
    CsrShape,
    read_csr_shape,
)
from cluster_inventory.api.constants import (
    LABEL_AGENT,
    LABEL_REGISTRATION,
    REPORTING_CONTROLLER_MANAGER,
)
from cluster_inventory.api.views import parse_time
from cluster_inventory.controller import Controller, Result
from cluster_inventory.kube import certificates
from cluster_inventory.kube.events import object_reference, record_event
from cluster_inventory.kube.informer import DELETED, strip_managed_fields
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.agent_approval import (
    CsrAction,
    Decision,
    csr_decision,
    is_pending,
    requester_of,
)
from cluster_inventory.manager.rules.registration import acceptance_of

__all__ = ["AgentApprover"]

_BY_MEMBER = "member"
_BY_REQUESTER = "requester"
_log = logging.getLogger("cluster_inventory.manager.agent_approver")


def _member_of(obj: dict[str, Any]) -> list[str]:
    member = objects.labels_of(obj).get(LABEL_AGENT)
    return [member] if member else []


def _requester_key(obj: dict[str, Any]) -> list[str]:
    spec = objects.spec(obj)
    username = str(spec.get("username") or "")
    groups = tuple(str(g) for g in spec.get("groups") or ())
    return [username] if requester_of(username, groups) is not None else []


class AgentApprover:
    """The controller that judges agent CSRs on the hub (:func:`~.agent_approval.csr_decision`).

    Args:
        hub: Hub client (CSR ``list``/``watch``/``delete``,
            ``certificatesigningrequests/approval`` ``update``, ``approve`` on signer
            ``kubernetes.io/kube-apiserver-client``, Events).
        config: The manager's settings: ``namespace`` (where registrations live) and
            ``agent_certificate_max_seconds``.
        joined: Whether member NAME's agent has joined (its report or heartbeat written:
            :meth:`~.agent_reports.AgentReports.joined`); a first CSR this approver
            approved counts too.
        registry: Prometheus registry of the controller's metrics.
        identity: ``reportingInstance`` of its Events.
        now: Wall clock (condition and Event times, a CSR's age).

    Attributes:
        controller: The controller (a Runnable): run it alone, or among the cluster
            manager's controllers (:class:`~.cluster_manager.ClusterManagerRunnable` does).
        approved: Names of the CSRs this approver approved (for tests and logs).
        deleted: Names of the CSRs it deleted, and why (its reason), in order.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        joined: Callable[[str], bool] = lambda _member: False,
        registry: CollectorRegistry = REGISTRY,
        identity: str = "cluster-inventory-manager",
        now: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.hub = hub
        self.config = config
        self.identity = identity
        self.now = now
        self._joined = joined
        self.approved: list[str] = []
        self.deleted: list[tuple[str, str]] = []
        #: (member, acceptance) whose first CSR this approver approved: joined from then on.
        self._first: set[tuple[str, str]] = set()
        cache = kube.InformerCache.for_client(hub)
        self.csrs = cache.informer(
            kube.CERTIFICATE_SIGNING_REQUESTS,
            namespaces=[None],
            name="hub CSRs",
            transform=strip_managed_fields,
        )
        self.csrs.add_indexer(_BY_MEMBER, _member_of)
        self.csrs.add_indexer(_BY_REQUESTER, _requester_key)
        self.registrations = cache.informer(
            kube.SECRETS,
            namespaces=[config.namespace],
            label_selector=f"{LABEL_REGISTRATION}=true",
            name="hub registration Secrets (metadata)",
            metadata_only=True,
            transform=strip_managed_fields,
        )
        self.controller: Controller[str] = (
            Controller(
                "clustermanager-agent-csrs",
                self.reconcile,
                registry=registry,
                describe=lambda key: {"object": f"CertificateSigningRequest {key}"},
                log=_log,
            )
            .watch(self.csrs, self._csr_keys)
            .watch(self.registrations, self._registration_keys)
        )

    def _pending(self, index: str, value: str) -> list[dict[str, Any]]:
        return [csr for csr in self.csrs.by_index(index, value) if is_pending(csr)]

    def _csr_keys(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        # A CSR that leaves the pending ones may move its requester's others up the ranks.
        keys = [] if event == DELETED else [str(objects.meta(obj).get("name"))]
        if event == DELETED or not is_pending(obj):
            for requester in _requester_key(obj):
                keys += [_name(c) for c in self._pending(_BY_REQUESTER, requester)]
        return keys

    def _registration_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        return [_name(c) for c in self._pending(_BY_MEMBER, str(objects.meta(obj).get("name")))]

    def _registration(self, member: str) -> dict[str, Any] | None:
        return self.registrations.get(f"{self.config.namespace}/{member}")

    def _rank(self, csr: dict[str, Any]) -> int:
        """1 for the requester's oldest pending CSR (creation time, then name), 2, ..."""
        keys = _requester_key(csr)
        if not keys:
            return 1
        order = sorted(
            (str(objects.meta(c).get("creationTimestamp") or ""), _name(c))
            for c in self._pending(_BY_REQUESTER, keys[0])
        )
        mine = (str(objects.meta(csr).get("creationTimestamp") or ""), _name(csr))
        return order.index(mine) + 1 if mine in order else len(order) + 1

    async def reconcile(self, name: str) -> Result | None:
        """Judge pending CSR ``name`` (:func:`~.agent_approval.csr_decision`) and act on it.

        Raises:
            KubeAPIError: The approval or the delete was refused (retried with backoff; a
                409 means the CSR changed meanwhile and is reconciled again from the cache).
        """
        csr = self.csrs.get(name)
        if csr is None or not is_pending(csr):
            return None
        shape = read_csr_shape(csr)
        registration = self._registration(shape.member) if shape.member else None
        current = acceptance_of(registration) if registration is not None else None
        created = parse_time(shape.created)
        decision = csr_decision(
            shape,
            current=current,
            joined=bool(shape.member)
            and (self._joined(shape.member) or (shape.member, current or "") in self._first),
            rank=self._rank(csr),
            age=None if created is None else (self.now() - created).total_seconds(),
            max_seconds=self.config.agent_certificate_max_seconds,
            namespace=self.config.namespace,
        )
        if decision.action is CsrAction.IGNORE:
            return None
        if decision.action is CsrAction.APPROVE:
            await self._approve(csr, shape, decision)
            return None
        _log.info(
            "CSR %s %s: %s",
            name,
            "deleted" if decision.action is CsrAction.DELETE else "left pending",
            decision.message,
            extra={"object": name},
        )
        await self._record(csr, decision)
        if decision.action is CsrAction.DELETE:
            uid = str(objects.meta(csr).get("uid") or "") or None
            await kube.delete(self.hub, kube.CERTIFICATE_SIGNING_REQUESTS, name, uid=uid)
            self.deleted.append((name, decision.reason))
            return None
        if decision.retry_after is not None:
            return Result(requeue_after=decision.retry_after)
        return None

    async def _record(self, csr: dict[str, Any], decision: Decision) -> None:
        """One Warning Event on the CSR, one on the requester's registration (if any)."""
        name = _name(csr)
        regarding = [object_reference(csr)]
        requester = decision.requester
        secret = self._registration(requester.member) if requester and requester.member else None
        if secret is not None:
            meta = objects.meta(secret)
            regarding.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "namespace": self.config.namespace,
                    "name": str(meta.get("name")),
                    "uid": str(meta.get("uid") or ""),
                }
            )
        for ref in regarding:
            note = (
                decision.message if ref["kind"] != "Secret" else f"CSR {name}: {decision.message}"
            )
            await record_event(
                self.hub,
                ref,
                reason=decision.reason,
                note=note,
                action="Approve",
                controller=REPORTING_CONTROLLER_MANAGER,
                instance=self.identity,
                dedupe=f"{name}:{decision.reason}",
                now=self.now(),
            )

    async def _approve(self, csr: dict[str, Any], shape: CsrShape, decision: Decision) -> None:
        await certificates.approve(
            self.hub,
            csr,
            reason=decision.reason,
            message=f"approved by the cluster manager {self.config.name!r}: {decision.message}",
            now=self.now(),
        )
        self.approved.append(shape.name)
        if decision.reason == "AgentAccepted":
            self._first.add((shape.member, shape.acceptance))
        _log.info(
            "approved CSR %s of agent member %s (%s)",
            shape.name,
            shape.member,
            "a rotation" if decision.reason == "AgentRotation" else "its bootstrap credential",
            extra={"object": shape.name},
        )


def _name(obj: dict[str, Any]) -> str:
    return str(objects.meta(obj).get("name"))
