"""A member's own page: what it is, how it is doing, what happened to it. Pure.

:func:`member_page` turns one :class:`~cluster_inventory.dashboard.rows.MemberRow` (every
profile of the member, one per inventory namespace) and the Events about those profiles into
a :class:`MemberPage`: per profile its conditions with the time each last changed
(``lastTransitionTime``: "False since 17:52:02, for 3m12s"), its properties, its access
providers and whether its member reports by an agent (pull) or is probed by the cluster
manager; the Events as one timeline, newest first; and the availability over time when the
dashboard has an :class:`AvailabilitySource` (Prometheus's answer; without one the slot is
empty, never a guess from the Events).

The member is named as its profiles name it, never by its member id (the ``kube-system``
UID). An access provider shows where and how a consumer connects (server, CA size, TLS
server name, proxy, the names of its extensions), never an extension's payload nor the user
part of a URL, so a credential a writer misplaced in a profile does not reach the page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from cluster_inventory._clock import utcnow
from cluster_inventory._durations import human_duration
from cluster_inventory.api.views import ConditionView, EventView, ProfileView
from cluster_inventory.dashboard.rows import MemberRow, Overview
from cluster_inventory.integrations.availability.history import Outage

__all__ = [
    "TIMELINE_LENGTH",
    "AccessLine",
    "Availability",
    "AvailabilitySource",
    "ConditionLine",
    "MemberPage",
    "ProfileDetail",
    "TimelineEntry",
    "find_member",
    "member_page",
    "member_path",
    "mode_of",
    "shown_url",
]

#: Events the timeline shows at most (the newest).
TIMELINE_LENGTH = 100


@dataclass(frozen=True, kw_only=True)
class ConditionLine:
    """One condition of a profile, with how long it has held.

    Attributes:
        condition: The condition as stored (type, status, reason, message).
        since: Its ``lastTransitionTime``, None if absent or malformed.
        held_for: How long ago that was, as kubectl prints an age (``3m12s``); "" without
            a time.
    """

    condition: ConditionView
    since: dt.datetime | None
    held_for: str


@dataclass(frozen=True, kw_only=True)
class AccessLine:
    """How a consumer reaches the member through one access provider (no credential).

    Attributes:
        name: The provider's name (``secretreader``).
        server: ``cluster.server`` as :func:`shown_url` shows it.
        ca_bytes: Length of ``certificate-authority-data`` (base64 characters; 0 if none).
        tls_server_name: ``cluster.tls-server-name``.
        proxy_url: ``cluster.proxy-url`` as :func:`shown_url` shows it.
        extensions: The names of ``cluster.extensions`` (their payloads are not shown).
    """

    name: str
    server: str
    ca_bytes: int
    tls_server_name: str
    proxy_url: str
    extensions: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ProfileDetail:
    """One profile of the member.

    Attributes:
        view: The profile, decoded once.
        mode: ``pull`` (its agent reports from inside the member), ``probe`` (the cluster
            manager reaches the member) or "" (it says neither).
        conditions: Its conditions in stored order.
        properties: ``(name, value, lastObservedTime or None)``, sorted by name.
        access: Its access providers, ``accessProviders`` before the deprecated ones.
    """

    view: ProfileView
    mode: str
    conditions: tuple[ConditionLine, ...]
    properties: tuple[tuple[str, str, dt.datetime | None], ...]
    access: tuple[AccessLine, ...]


@dataclass(frozen=True, kw_only=True)
class TimelineEntry:
    """One Event of the member's timeline.

    Attributes:
        profile: ``namespace/name`` of the profile it is about.
        event: The Event, decoded once.
        ago: How long ago it was last seen (``2m``).
    """

    profile: str
    event: EventView
    ago: str


@dataclass(frozen=True, kw_only=True)
class Availability:
    """The member's availability over time, as a long-run store (Prometheus) answered.

    Attributes:
        windows: ``(window, fraction available)``, e.g. ``("7d", 0.9986)``; None where the
            store has no answer for that window.
        outages: Its outages, newest first (as ``availability`` reads them from Prometheus).
        source: Where the figures come from (the Prometheus URL), shown beside them.
        error: Why the store could not answer ("" when it did).
    """

    windows: tuple[tuple[str, float | None], ...] = ()
    outages: tuple[Outage, ...] = ()
    source: str = ""
    error: str = ""


class AvailabilitySource(Protocol):
    """What the member page asks of a long-run store (the hook for a Prometheus query).

    The dashboard shows the slot only when it was given one; the query itself (recording
    rules per member over 1 h, 1 d, 7 d, 30 d: docs/dashboard.md) lives with the store.
    """

    async def availability(self, member: MemberRow) -> Availability:
        """The member's availability; a store that cannot answer says why in ``error``."""
        ...


@dataclass(frozen=True, kw_only=True)
class MemberPage:
    """Everything a member's page shows, at one point in time.

    Attributes:
        row: The member's row of the overview (name, health, version, delivery).
        profiles: One detail per profile, in the row's order.
        timeline: The Events about its profiles, newest first, at most
            :data:`TIMELINE_LENGTH`.
        events_error: Why the Events could not be read ("" when they were).
        availability: The long-run store's answer; None when the dashboard has no store.
        built: When it was built (UTC).
    """

    row: MemberRow
    profiles: tuple[ProfileDetail, ...]
    timeline: tuple[TimelineEntry, ...]
    events_error: str
    availability: Availability | None
    built: dt.datetime

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes its profiles report (``pull``, ``probe``), each once, in their order."""
        return tuple(dict.fromkeys(d.mode for d in self.profiles if d.mode))


def member_path(row: MemberRow) -> str:
    """The path of the member's page below the dashboard's root: ``member/NS/NAME``.

    Its first profile names it (:attr:`MemberRow.ref`), each part percent-encoded.
    """
    namespace, _, name = row.ref.partition("/")
    return f"member/{quote(namespace, safe='')}/{quote(name, safe='')}"


def find_member(overview: Overview, namespace: str, name: str) -> MemberRow | None:
    """The member one of whose profiles is ``namespace/name``, or None."""
    key = f"{namespace}/{name}"
    for row in overview.members:
        if any(p.key == key for p in row.profiles):
            return row
    return None


def mode_of(view: ProfileView) -> str:
    """``pull`` or ``probe``: :attr:`ProfileView.access_mode` (the one rule, also the metrics')."""
    return view.access_mode


def shown_url(value: Any) -> str:
    """A URL from a profile as the page shows it: scheme, host, port and path only.

    A user part (``https://user:token@host``), a query and a fragment are dropped: the
    Cluster Inventory API puts no credential there, and a writer that did must not have it
    shown. A value that does not parse as a URL is not shown ("").
    """
    if not isinstance(value, str) or not value:
        return ""
    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
    except ValueError:
        return ""
    if not parts.scheme or not host:
        return ""
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}{f':{port}' if port else ''}{parts.path}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _access_line(provider: Mapping[str, Any]) -> AccessLine:
    cluster = _mapping(provider.get("cluster"))
    ca = cluster.get("certificate-authority-data")
    extensions = cluster.get("extensions")
    return AccessLine(
        name=str(provider.get("name") or ""),
        server=shown_url(cluster.get("server")),
        ca_bytes=len(ca) if isinstance(ca, str) else 0,
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        proxy_url=shown_url(cluster.get("proxy-url")),
        extensions=tuple(
            str(e.get("name") or "")
            for e in (extensions if isinstance(extensions, list) else ())
            if isinstance(e, Mapping)
        ),
    )


def _ago(when: dt.datetime | None, now: dt.datetime) -> str:
    return human_duration((now - when).total_seconds()) if when is not None else ""


def _detail(view: ProfileView, now: dt.datetime) -> ProfileDetail:
    deprecated = view.deprecated_providers
    providers = sorted(view.access_providers, key=lambda p: p.get("name") in deprecated)
    return ProfileDetail(
        view=view,
        mode=mode_of(view),
        conditions=tuple(
            ConditionLine(
                condition=c, since=c.last_transition, held_for=_ago(c.last_transition, now)
            )
            for c in view.conditions.values()
        ),
        properties=tuple(
            (name, value, view.properties_observed.get(name))
            for name, value in sorted(view.properties.items())
        ),
        access=tuple(_access_line(p) for p in providers),
    )


_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


def member_page(
    row: MemberRow,
    events: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    events_error: str = "",
    availability: Availability | None = None,
    now: dt.datetime | None = None,
) -> MemberPage:
    """Build a member's page. Pure.

    Args:
        row: The member's row (:func:`find_member`).
        events: ``namespace/name`` of each profile -> the ``events.k8s.io/v1`` Events about
            it (:func:`~cluster_inventory.kube.object_events.events_about`).
        events_error: Why some Events could not be read (shown; the rest still is).
        availability: What the long-run store answered, None without a store.
        now: The build time (default: the wall clock).

    Returns:
        The page's content.
    """
    now = now or utcnow()
    entries = [
        TimelineEntry(profile=key, event=e, ago=_ago(e.last, now))
        for key, listed in events.items()
        for e in (EventView.of(raw) for raw in listed)
    ]
    entries.sort(key=lambda t: (t.event.last or _NEVER, t.event.name), reverse=True)
    return MemberPage(
        row=row,
        profiles=tuple(_detail(view, now) for view in row.profiles),
        timeline=tuple(entries[:TIMELINE_LENGTH]),
        events_error=events_error,
        availability=availability,
        built=now,
    )
