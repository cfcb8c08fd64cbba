"""What the benchmark sees of a run's ClusterProfiles: one watch, and waiters on it.

The profile watch is started before any replica, so a deletion or a holder flip between
two polls cannot be missed; every figure about profiles (full status, holders, status
writes, false health transitions, profiles saying the manager is behind) comes from it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_SHARD_HOLDER, LABEL_CLUSTER_MANAGER
from cluster_inventory.kube.informer import Informer, strip_managed_fields
from cluster_inventory.manager.rules.verdicts import REASON_BEHIND


def conditions(profile: dict[str, Any]) -> dict[str, str]:
    """Condition type -> status."""
    return {c["type"]: c["status"] for c in (profile.get("status") or {}).get("conditions") or ()}


def full(profile: dict[str, Any], *, properties_synced: bool = True) -> bool:
    """Every status field the manager writes is there and good: version, ControlPlaneHealthy
    and Joined True, properties, an access provider, and (``properties_synced``, a probed
    member's: only its ClusterProperty watch sets it) PropertiesSynced True."""
    status = profile.get("status") or {}
    conds = conditions(profile)
    return bool(
        (status.get("version") or {}).get("kubernetes")
        and conds.get("ControlPlaneHealthy") == "True"
        and conds.get("Joined") == "True"
        and (not properties_synced or conds.get("cluster-inventory.dev/PropertiesSynced") == "True")
        and status.get("properties")
        and status.get("accessProviders")
    )


def holder(profile: dict[str, Any]) -> str:
    """The replica its shard-holder annotation names ("" when none does)."""
    return str((profile["metadata"].get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER) or "")


def props(profile: dict[str, Any]) -> dict[str, str]:
    """Property name -> value, from its status."""
    return {p["name"]: p["value"] for p in (profile.get("status") or {}).get("properties") or ()}


class Waiter:
    """Set once ``test(name, profile)`` held for every name in ``names`` (from watch events)."""

    def __init__(self, names: set[str], test: Callable[[str, dict[str, Any]], bool]) -> None:
        self.pending = set(names)
        self.test = test
        self.done = asyncio.Event()
        self.at = 0.0
        self.times: list[float] = []  # when each name passed, in order

    def check(self, name: str, obj: dict[str, Any], now: float) -> None:
        if name in self.pending and self.test(name, obj):
            self.pending.discard(name)
            self.times.append(now)
            if not self.pending and not self.done.is_set():
                self.at = now
                self.done.set()


class ProfileWatch:
    """One run's profiles as one watch reports them, started before any replica.

    Keeps per profile the sequence of holders seen (with the time of each change), every
    event that changed a status (time, name, holder, resourceVersion), the deletions, the
    set of profiles at full status, and every ControlPlaneHealthy change away from True
    (time, name, the condition's reason, whether the holder changed since the profile was
    True): no member goes down in this benchmark, so each of those is false.
    """

    def __init__(self, hub: kube.ApiClient, manager: str, namespace: str) -> None:
        self.namespace = namespace
        self.informer = Informer(
            hub,
            kube.CLUSTER_PROFILES,
            namespace=namespace,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={manager}",
            name="bench profiles",
            transform=strip_managed_fields,
        )
        self.full: set[str] = set()
        self.deleted = 0
        self.holders: dict[str, list[tuple[float, str]]] = {}
        self.status_changes: list[tuple[float, str, str, int]] = []
        self.first_event = 0.0
        self.waiters: list[Waiter] = []
        self.healthy: dict[str, tuple[str, str]] = {}
        self.false_transitions: list[tuple[float, str, str, bool]] = []
        #: Profiles whose ControlPlaneHealthy says the manager is behind (REASON_BEHIND), the
        #: most at once since :meth:`reset_behind`, and every profile that said so.
        self.behind: set[str] = set()
        self.behind_max = 0
        self.behind_ever: set[str] = set()
        self.informer.add_handler(self._on_event)

    def reset_behind(self) -> None:
        self.behind_max = len(self.behind)
        self.behind_ever = set(self.behind)

    def _on_event(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        now = time.perf_counter()
        self.first_event = self.first_event or now
        name = str(obj["metadata"]["name"])
        if event == "DELETED":
            self.deleted += 1
            self.full.discard(name)
            self.healthy.pop(name, None)
            self.behind.discard(name)
            return
        who = holder(obj)
        cond = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or ()
                if c["type"] == "ControlPlaneHealthy"
            ),
            {},
        )
        was, held_by = self.healthy.get(name, ("", ""))
        if was == "True" and cond.get("status") != "True":
            reason = f"{cond.get('status', 'absent')}/{cond.get('reason', '')}"
            self.false_transitions.append((now, name, reason, who != held_by))
        self.healthy[name] = (cond.get("status", ""), who)
        if cond.get("reason") == REASON_BEHIND:
            self.behind.add(name)
            self.behind_ever.add(name)
            self.behind_max = max(self.behind_max, len(self.behind))
        else:
            self.behind.discard(name)
        seen = self.holders.setdefault(name, [])
        if not seen or seen[-1][1] != who:
            seen.append((now, who))
        if (old or {}).get("status") != obj.get("status"):
            rv = int(obj["metadata"].get("resourceVersion") or 0)
            self.status_changes.append((now, name, who, rv))
        if full(obj):
            self.full.add(name)
        else:
            self.full.discard(name)
        for waiter in self.waiters:
            waiter.check(name, obj, now)

    def waiter(self, names: set[str], test: Callable[[str, dict[str, Any]], bool]) -> Waiter:
        """A :class:`Waiter` that also counts what already holds."""
        waiter = Waiter(names, test)
        now = time.perf_counter()
        for name in list(waiter.pending):
            obj = self.informer.get(f"{self.namespace}/{name}")
            if obj is not None:
                waiter.check(name, obj, now)
        self.waiters.append(waiter)
        return waiter

    def by_name(self) -> dict[str, dict[str, Any]]:
        return {str(p["metadata"]["name"]): p for p in self.informer.items()}

    def holders_after(self, since: float) -> dict[str, list[str]]:
        """Per profile: its holder at ``since`` followed by each different holder seen after.

        An empty holder (a replica releasing a profile it no longer owns, before the new
        owner claims it) is left out: a handover reads ``[old, new]`` either way.
        """
        out = {}
        for name, seen in self.holders.items():
            held = [who for t, who in seen if t <= since and who][-1:]
            for t, who in seen:
                if t > since and who and (not held or held[-1] != who):
                    held.append(who)
            out[name] = held
        return out


def quantiles(times: list[float]) -> dict[str, float]:
    """The first, 50%, 90% and 99% of ``times`` (seconds, rounded), or {} if none."""
    times = sorted(times)
    return {
        str(q): round(times[min(len(times) - 1, int(q * len(times)))], 2)
        for q in (0.0, 0.5, 0.9, 0.99)
        if times
    }


async def wait(waiter: Waiter, timeout: float, what: str) -> float:
    """``waiter.at`` once it is done; raises naming how many are still pending."""
    try:
        await asyncio.wait_for(waiter.done.wait(), timeout)
    except TimeoutError:
        raise RuntimeError(
            f"{what}: {len(waiter.pending)} still pending after {timeout} s"
        ) from None
    return waiter.at


def behind(profile: dict[str, Any]) -> bool:
    """Its ControlPlaneHealthy condition says the cluster manager is behind (REASON_BEHIND)."""
    return any(
        c["type"] == "ControlPlaneHealthy" and c.get("reason") == REASON_BEHIND
        for c in (profile.get("status") or {}).get("conditions") or ()
    )
