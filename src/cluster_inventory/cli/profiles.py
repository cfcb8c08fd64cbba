"""How ClusterProfiles print: table rows for ``get`` and the text of ``describe``.

Pure functions of decoded objects (dicts as the API server returns them, read through one
:class:`~cluster_inventory.api.views.ProfileView` each) and a clock, so the shapes are
unit-tested without a server and the golden tests only pin them down.

The upstream CRD declares no printer columns, so ``kubectl get clusterprofiles`` shows only
NAME and AGE. ``kubectl inventory get`` shows what a reader of an inventory asks first: which
manager owns the profile, the member's Kubernetes version, whether its control plane is
healthy, and how to reach it (KEP-4322 status fields).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cluster_inventory.api import constants as c
from cluster_inventory.api.views import EventView, ProfileView, format_time
from cluster_inventory.cli._table import age, escape_terminal

__all__ = [
    "PROFILE_COLUMNS",
    "WIDE_COLUMNS",
    "access_provider_names",
    "describe_profile",
    "event_age",
    "profile_row",
    "properties_text",
]

#: Columns of ``get`` (kubectl puts AGE last of the default columns).
PROFILE_COLUMNS = ("NAME", "MANAGER", "VERSION", "HEALTHY", "ACCESS PROVIDERS", "AGE")
#: Columns ``-o wide`` adds after the default ones, as kubectl does.
WIDE_COLUMNS = ("JOINED", "PROPERTIES")


def _view(profile: Mapping[str, Any] | ProfileView) -> ProfileView:
    return profile if isinstance(profile, ProfileView) else ProfileView.of(profile)


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else empty: a field of another type prints as absent."""
    return value if isinstance(value, Mapping) else {}


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list field (a profile from a file may hold anything there)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _providers(view: ProfileView) -> list[Mapping[str, Any]]:
    """The merged access providers, those of ``accessProviders`` first.

    The set is ``pkg/access``'s (:attr:`ProfileView.access_providers`); a printer lists the
    current list before the deprecated ``credentialProviders`` one, each in stored order.
    """
    deprecated = view.deprecated_providers
    return sorted(view.access_providers, key=lambda p: p.get("name") in deprecated)


def access_provider_names(profile: Mapping[str, Any] | ProfileView) -> list[str]:
    """Names of the profile's access providers, then of its deprecated credential providers.

    Args:
        profile: A decoded ClusterProfile, or its view.
    """
    return [str(p["name"]) for p in _providers(_view(profile))]


def properties_text(profile: Mapping[str, Any] | ProfileView) -> str:
    """``status.properties`` as ``name=value`` pairs sorted by name, comma-separated.

    Args:
        profile: A decoded ClusterProfile, or its view.
    """
    return ",".join(f"{k}={v}" for k, v in sorted(_view(profile).properties.items()))


def profile_row(
    profile: Mapping[str, Any],
    *,
    wide: bool = False,
    namespace: bool = False,
    now: dt.datetime | None = None,
) -> list[str]:
    """One ``get`` table row for ``profile``, cells in :data:`PROFILE_COLUMNS` order.

    Args:
        profile: A decoded ClusterProfile.
        wide: Append the :data:`WIDE_COLUMNS` cells.
        namespace: Prepend the NAMESPACE cell (``--all-namespaces``).
        now: The clock for AGE (default: now, UTC).

    Returns:
        Cells as strings; an empty cell is printed ``<none>`` by the table printer.
    """
    view = ProfileView.of(profile)
    row = [
        view.name,
        view.cluster_manager,
        view.version,
        view.condition_status(c.CONDITION_CONTROL_PLANE_HEALTHY),
        ",".join(access_provider_names(view)),
        age(view.created, now),
    ]
    if wide:
        row += [view.condition_status(c.CONDITION_JOINED), properties_text(view)]
    if namespace:
        row.insert(0, view.namespace)
    return row


def _pairs(values: Mapping[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(values.items())] or ["<none>"]


def _time(value: dt.datetime | None) -> str:
    return format_time(value) if value is not None else ""


def _block(lines: list[str], title: str, headers: Sequence[str], rows: list[list[str]]) -> None:
    """A kubectl describe sub-table: title, headers, dashes, rows; ``<none>`` when empty.

    Every cell is escaped (:func:`~cluster_inventory.cli._table.escape_terminal`), as
    kubectl's describe writes everything through ``printers.WriteEscaped``.
    """
    if not rows:
        lines.append(f"{title}:  <none>")
        return
    lines.append(f"{title}:")
    escaped = [[escape_terminal(cell) for cell in row] for row in rows]
    table = [list(headers), ["-" * len(h) for h in headers], *escaped]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers) - 1)]
    for row in table:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append(("  " + "  ".join([*cells, row[-1]])).rstrip())


def _fields(lines: list[str], pairs: Sequence[tuple[str, Sequence[str]]], indent: str = "") -> None:
    """``Key:  value`` lines aligned on the longest key; further values under the first.

    Values are escaped (:func:`~cluster_inventory.cli._table.escape_terminal`).
    """
    width = max(len(key) for key, _ in pairs) + 2
    for key, shown in pairs:
        first, *rest = [escape_terminal(value) for value in shown] or ["<none>"]
        lines.append(f"{indent}{(key + ':').ljust(width + 1)}{first}".rstrip())
        lines.extend(f"{indent}{' ' * (width + 1)}{value}" for value in rest)


def describe_profile(
    profile: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]] = (),
    *,
    now: dt.datetime | None = None,
) -> str:
    """The ``describe`` text of one ClusterProfile, laid out as kubectl describe does.

    Identity and spec first, then status: version, conditions (with their transition times,
    not ages, so two reads agree), properties, access providers (server, CA size and
    extensions; a CA is public but long, and a profile never holds a credential), and the
    Events whose ``regarding`` is this profile, oldest first (by when each was last seen),
    each with its count as kubectl shows it (:func:`event_age`).

    Args:
        profile: A decoded ClusterProfile.
        events: ``events.k8s.io/v1`` Events about it, in any order.
        now: The clock for event ages (default: now, UTC).

    Returns:
        The text, ending with a newline.
    """
    view = ProfileView.of(profile)
    lines: list[str] = []
    _fields(
        lines,
        [
            ("Name", [view.name]),
            ("Namespace", [view.namespace]),
            ("Labels", _pairs(view.labels)),
            ("Annotations", _pairs(view.annotations)),
            ("API Version", [str(profile.get("apiVersion", ""))]),
            ("Kind", [str(profile.get("kind", c.CLUSTER_PROFILE_KIND))]),
            ("Created", [format_time(view.created) if view.created else "<unknown>"]),
            ("Display Name", [view.display_name or "<none>"]),
            ("Cluster Manager", [view.cluster_manager or "<none>"]),
            ("Version", [view.version or "<none>"]),
        ],
    )
    _block(
        lines,
        "Conditions",
        ("Type", "Status", "Last Transition", "Reason", "Message"),
        [
            [cond.type, cond.status, _time(cond.last_transition), cond.reason, cond.message]
            for cond in view.conditions.values()
        ],
    )
    _block(
        lines,
        "Properties",
        ("Name", "Value", "Last Observed"),
        [
            [name, value, _time(view.properties_observed.get(name))]
            for name, value in sorted(view.properties.items())
        ],
    )
    providers = _providers(view)
    if not providers:
        lines.append("Access Providers:  <none>")
    else:
        lines.append("Access Providers:")
        for provider in providers:
            name = str(provider.get("name", ""))
            cluster = _mapping(provider.get("cluster"))
            ca = str(cluster.get("certificate-authority-data") or "")
            extensions = [
                f"{ext.get('name', '')}: {_compact(ext.get('extension'))}"
                for ext in _entries(cluster.get("extensions"))
            ]
            _fields(
                lines,
                [
                    ("Name", [name]),
                    ("Server", [str(cluster.get("server") or "<none>")]),
                    ("CA", [f"{len(ca)} bytes (base64)" if ca else "<none>"]),
                    ("TLS Server Name", [str(cluster.get("tls-server-name") or "<none>")]),
                    ("Extensions", extensions),
                ],
                indent="  ",
            )
    seen = sorted((EventView.of(ev) for ev in events), key=lambda e: e.last or e.first or _NEVER)
    _block(
        lines,
        "Events",
        ("Type", "Reason", "Age", "From", "Message"),
        [[e.type, e.reason, event_age(e, now), e.controller, e.note.strip()] for e in seen],
    )
    return "\n".join(lines) + "\n"


_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


def event_age(event: EventView, now: dt.datetime | None = None) -> str:
    """The Age cell of an Event as ``kubectl describe`` prints it (``DescribeEvents``).

    ``5m`` for an Event seen once; ``2m (x7 over 1h)`` for one seen 7 times (its
    ``series.count``, or core/v1's ``count``), the last 2 minutes ago and the first an hour
    ago.

    Args:
        event: The decoded Event.
        now: The clock (default: now, UTC).
    """
    first = age(event.first, now)
    if event.count > 1:
        return f"{age(event.last, now)} (x{event.count} over {first})"
    return first


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
