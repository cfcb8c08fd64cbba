"""What the cluster manager tells people: Warning Events, log lines and gauges, each once.

A broken registration, a duplicate member, a source that cannot be read, profiles held
because of an invalid registration and an inventory asking for a member role its cluster set
does not allow are reported once per change (not once per inventory pass),
so a fleet of thousands with one bad Secret does not flood the log or the Event API. Events
are best effort (:func:`cluster_inventory.kube.events.record_event`); nothing here decides.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    MEMBER_REPORT_KIND,
    REASON_INVALID_REPORT_FIELD,
    REASON_MEMBER_ROLE_NOT_ALLOWED,
    REPORTING_CONTROLLER_MANAGER,
)
from cluster_inventory.api.member_report import API_VERSION as MEMBER_REPORT_API_VERSION
from cluster_inventory.kube.events import object_reference, record_event
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.rules.agent_report_fields import CheckedReport
from cluster_inventory.manager.rules.inventory import DuplicateMember, Inventory, ProfileKey
from cluster_inventory.manager.rules.registration import (
    Registration,
    RegistrationError,
)

__all__ = ["ManagerFindings"]

_log = logging.getLogger("cluster_inventory.manager")


class ManagerFindings:
    """Report the manager's findings once per change.

    Args:
        hub: Hub client (Events are written there).
        metrics: The manager's collectors.
        identity: Events' ``reportingInstance``.
        now: Wall clock (Event times).
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        metrics: ManagerMetrics,
        *,
        identity: str,
        now: Callable[[], dt.datetime],
    ) -> None:
        self.hub = hub
        self.metrics = metrics
        self.identity = identity
        self.now = now
        self._invalid: dict[str, str] = {}
        self._duplicates: set[DuplicateMember] = set()
        self._failing: tuple[str, ...] = ()
        self._held: tuple[str, ...] = ()
        #: Per MemberReport ``NS/NAME``: the refused fields last reported in an Event.
        self._refused: dict[str, str] = {}
        #: Per inventory namespace: the member-role refusal last reported in an Event.
        self._roles_refused: dict[str, str] = {}

    async def invalid_registrations(
        self, invalid: Iterable[tuple[Mapping[str, Any], RegistrationError]]
    ) -> None:
        """Report every invalid registration; one fixed since is reported again if it breaks.

        A warning in the log and, when the source is an API object, a Warning Event on it
        (the registration Secret, the Cluster API ``Cluster``), once per version of the
        object and error. Sets ``cluster_inventory_invalid_registrations``.
        """
        invalid = list(invalid)
        self.metrics.invalid_registrations.set(len(invalid))
        for obj, error in invalid:
            await self._invalid_registration(obj, error)
        reported = {error.source for _, error in invalid}
        for source in [s for s in self._invalid if s not in reported]:
            del self._invalid[source]

    async def _invalid_registration(self, obj: Mapping[str, Any], error: RegistrationError) -> None:
        meta = objects.meta(obj)
        mark = hashlib.sha256(
            f"{meta.get('uid')}/{meta.get('resourceVersion')}/{error}".encode()
        ).hexdigest()[:10]
        if self._invalid.get(error.source) == mark:
            return
        self._invalid[error.source] = mark
        _log.warning("invalid registration: %s", error, extra={"object": error.source})
        if meta.get("name"):
            regarding = object_reference(obj)
            if meta.get("resourceVersion"):
                regarding["resourceVersion"] = str(meta["resourceVersion"])
            await self._event(regarding, "Register", "InvalidRegistration", str(error), mark)

    async def duplicate(self, dup: DuplicateMember, reg: Registration) -> None:
        """Report once that ``dup`` gets no profile in its inventory.

        A warning in the log and a Warning Event on the registration's object: the conflict
        is reported, not resolved silently.
        """
        if dup in self._duplicates:
            return
        self._duplicates.add(dup)
        _log.warning("duplicate member: %s", dup, extra={"object": reg.source})
        if reg.regarding is not None:
            await self._event(dict(reg.regarding), "Place", "DuplicateMember", str(dup), str(dup))

    async def report_problems(
        self, report: Mapping[str, Any] | None, checked: CheckedReport | None
    ) -> None:
        """A Warning Event on an agent's MemberReport, once per set of refused fields.

        ``InvalidReportField``, the note naming each field and what is wrong with it (the
        profiles' ``ReportValid`` says the same). A report whose fields are all copied
        again is forgotten, so the next refusal is reported anew; the Event's name is
        derived from the report's uid and the refusals, so a restart adds none.
        """
        meta = objects.meta(report or {})
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if checked is None or not checked.problems or report is None:
            self._refused.pop(key, None)
            return
        note = checked.condition().message
        if self._refused.get(key) == note:
            return
        self._refused[key] = note
        regarding = {
            "apiVersion": MEMBER_REPORT_API_VERSION,
            "kind": MEMBER_REPORT_KIND,
            "namespace": str(meta.get("namespace") or ""),
            "name": str(meta.get("name") or ""),
        }
        if meta.get("uid"):
            regarding["uid"] = str(meta["uid"])
        dedupe = f"{meta.get('uid')}/{note}"
        await self._event(regarding, "Copy", REASON_INVALID_REPORT_FIELD, note, dedupe)

    async def member_roles(
        self,
        inventories: Iterable[Inventory],
        namespace: Callable[[str], Mapping[str, Any] | None],
    ) -> None:
        """Report each inventory whose asked-for member role is refused, once per refusal.

        A warning in the log and a Warning Event ``MemberRoleNotAllowed`` on the Namespace
        naming the role, the cluster set and the rule (:mod:`.member_roles`). One refused
        again after it was fixed is reported again.

        Args:
            inventories: Every inventory now.
            namespace: The hub's Namespace object by name (the informer's cache).
        """
        refused = {inv.namespace: inv.role_refusal for inv in inventories if inv.role_refusal}
        for name, refusal in sorted(refused.items()):
            if self._roles_refused.get(name) == refusal:
                continue
            self._roles_refused[name] = refusal
            _log.warning("member role not allowed: %s", refusal, extra={"object": name})
            meta = objects.meta(namespace(name) or {})
            regarding = {
                "apiVersion": kube.NAMESPACES.api_version,
                "kind": kube.NAMESPACES.kind,
                "name": name,
            }
            if meta.get("uid"):
                regarding["uid"] = str(meta["uid"])
            await self._event(
                regarding, "Grant", REASON_MEMBER_ROLE_NOT_ALLOWED, refusal, f"{name}/{refusal}"
            )
        self._roles_refused = {
            name: r for name, r in self._roles_refused.items() if name in refused
        }

    def source_failures(self, failures: list[str]) -> None:
        """Log a registration source failing or reading again (once per change; a gauge)."""
        self.metrics.source_failing.set(len(failures))
        now = tuple(failures)
        if now == self._failing:
            return
        for failure in now:
            if failure not in self._failing:
                _log.error(
                    "registration source cannot be read; its last good view is kept, "
                    "nothing it registered is deleted until it reads again: %s",
                    failure,
                )
        if self._failing and not now:
            _log.info("registration sources read again")
        self._failing = now

    def held(self, keys: list[ProfileKey]) -> None:
        """Log once which profiles are kept because their registration is invalid (a gauge)."""
        self.metrics.held_profiles.set(len(keys))
        now = tuple(sorted(map(str, keys)))
        if now == self._held:
            return
        self._held = now
        if keys:
            _log.warning(
                "keeping %d profile(s) whose registration is invalid (fix it or remove "
                "the member to delete them): %s",
                len(keys),
                ", ".join(now[:20]),
            )

    async def _event(
        self, regarding: dict[str, str], action: str, reason: str, note: str, dedupe: str
    ) -> None:
        await record_event(
            self.hub,
            regarding,
            reason=reason,
            note=note,
            action=action,
            controller=REPORTING_CONTROLLER_MANAGER,
            instance=self.identity,
            dedupe=dedupe,
            now=self.now(),
        )
