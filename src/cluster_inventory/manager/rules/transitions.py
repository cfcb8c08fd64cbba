"""Which changes of a profile's conditions are news, and the Event each one is. Pure.

A node's ``NodeReady``/``NodeNotReady`` Events (kubelet, the node lifecycle controller) are
the model: the cluster manager reports on the ClusterProfile each transition of a condition it
writes (``docs/observability.md``): ``ControlPlaneHealthy`` (an agent member going stale is
its ``Unknown``/``AgentHeartbeatStale``), ``Joined`` and the properties' ``PropertiesSynced``
(properties not mirrored). A transition is a change of a condition's status, or of its reason
while it is not ``True`` (why a member is down changed); a profile's first status reports only
what is wrong, ``False`` (a healthy member's new profile is no news, nor is ``Unknown``, not
known yet; a fleet's first start would otherwise write an Event per profile and condition).
``ReportValid`` has its own Event on the agent's MemberReport
(:mod:`~cluster_inventory.manager.controllers.findings`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    CONDITION_PROPERTIES_SYNCED,
    REASON_AGENT_HEARTBEAT_STALE,
)

__all__ = [
    "REPORTED_CONDITIONS",
    "ConditionTransition",
    "condition_transitions",
]

#: Per condition: the Event reason when it turns ``True``, and when it turns anything else.
_EVENT_REASONS = {
    CONDITION_CONTROL_PLANE_HEALTHY: ("ControlPlaneHealthy", "ControlPlaneUnhealthy"),
    CONDITION_JOINED: ("Joined", "NotJoined"),
    CONDITION_PROPERTIES_SYNCED: ("PropertiesMirrored", "PropertiesNotMirrored"),
}
#: The conditions whose transitions are reported, in the order they are.
REPORTED_CONDITIONS = tuple(_EVENT_REASONS)
#: Characters of a condition's message an Event's note carries (the note's limit is 1 KiB).
_MESSAGE_LIMIT = 400


@dataclass(frozen=True, kw_only=True)
class ConditionTransition:
    """One reported change of a profile's condition.

    Attributes:
        condition: The condition type (``ControlPlaneHealthy``).
        status: Its new status (``True``, ``False``, ``Unknown``).
        reason: Its new reason (``APIServerUnreachable``).
        message: Its new message.
        previous: Its status before ("" when the profile had none).
        previous_reason: Its reason before ("" when the profile had none).
    """

    condition: str
    status: str
    reason: str
    message: str
    previous: str
    previous_reason: str = ""

    @property
    def event_type(self) -> str:
        """``Normal`` when the condition turned ``True``, else ``Warning``."""
        return "Normal" if self.status == "True" else "Warning"

    @property
    def event_reason(self) -> str:
        """The Event's reason, by condition and whether it turned ``True``.

        ``ControlPlaneHealthy``/``ControlPlaneUnhealthy``, ``Joined``/``NotJoined``,
        ``PropertiesMirrored``/``PropertiesNotMirrored``; an agent member's heartbeat gone
        stale is ``AgentHeartbeatStale``.
        """
        if self.condition == CONDITION_CONTROL_PLANE_HEALTHY and (
            self.reason == REASON_AGENT_HEARTBEAT_STALE
        ):
            return REASON_AGENT_HEARTBEAT_STALE
        good, bad = _EVENT_REASONS[self.condition]
        return good if self.status == "True" else bad

    def note(self, member: str) -> str:
        """The Event's note, naming the member (a few hundred characters at most).

        ``member c1: ControlPlaneHealthy True -> False (APIServerUnreachable): <message>``;
        a new reason while the status stays: ``... False (APIServerUnreachable ->
        ReadyzCheckFailed): ...``. A condition's message names checks and errors, never a
        credential (:mod:`~cluster_inventory.kube.probes`); an agent member's is its agent's
        text, so every character that is not printable (an escape sequence, a newline) reads
        as a space: a note is shown on terminals (``kubectl describe``) and pages.
        """
        if self.previous == self.status:
            change = f"{self.status} ({self.previous_reason} -> {self.reason})"
        elif self.previous:
            change = f"{self.previous} -> {self.status} ({self.reason})"
        else:
            change = f"{self.status} ({self.reason})"
        text = f"member {member}: {self.condition} {change}"
        message = self.message.strip()
        if message:
            cut = message if len(message) <= _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + "..."
            text += f": {cut}"
        return "".join(ch if ch.isprintable() else " " for ch in text)


def _by_type(conditions: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(conditions, Sequence):
        return {}
    return {str(c.get("type")): c for c in conditions if isinstance(c, Mapping)}


def condition_transitions(
    previous: Mapping[str, Any] | None, status: Mapping[str, Any]
) -> list[ConditionTransition]:
    """The reported transitions from a profile's stored ``status`` to the one just written.

    Args:
        previous: The profile's ``status`` before the write (None or {}: its first status).
        status: The ``status`` written (:func:`.status.build_status`).

    Returns:
        One transition per condition of :data:`REPORTED_CONDITIONS` whose status changed,
        or whose reason changed while it is not ``True``; of a condition the profile did
        not have (its first status), only a ``False`` one. In :data:`REPORTED_CONDITIONS`
        order.
    """
    before = _by_type((previous or {}).get("conditions"))
    after = _by_type(status.get("conditions"))
    out = []
    for kind in REPORTED_CONDITIONS:
        new = after.get(kind)
        if new is None:
            continue
        old = before.get(kind)
        state, reason = str(new.get("status", "")), str(new.get("reason", ""))
        if old is None:
            # Not known yet (Unknown: the properties not listed yet) is no news either.
            news = state == "False"
        else:
            was, why = str(old.get("status", "")), str(old.get("reason", ""))
            news = was != state or (state != "True" and why != reason)
        if news:
            out.append(
                ConditionTransition(
                    condition=kind,
                    status=state,
                    reason=reason,
                    message=str(new.get("message", "")),
                    previous="" if old is None else str(old.get("status", "")),
                    previous_reason="" if old is None else str(old.get("reason", "")),
                )
            )
    return out
