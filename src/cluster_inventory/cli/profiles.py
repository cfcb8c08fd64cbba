"""How ClusterProfiles print: table rows for ``get`` and the text of ``describe``.

Pure functions of decoded objects (dicts as the API server returns them) and a clock, so the
shapes are unit-tested without a server and the golden tests only pin them down.

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
from cluster_inventory.cli._table import age

__all__ = [
    "PROFILE_COLUMNS",
    "WIDE_COLUMNS",
    "access_provider_names",
    "condition",
    "describe_profile",
    "profile_row",
    "properties_text",
]

#: Columns of ``get`` (kubectl puts AGE last of the default columns).
PROFILE_COLUMNS = ("NAME", "MANAGER", "VERSION", "HEALTHY", "ACCESS PROVIDERS", "AGE")
#: Columns ``-o wide`` adds after the default ones, as kubectl does.
WIDE_COLUMNS = ("JOINED", "PROPERTIES")


def _status(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(profile.get("status"))


def _meta(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(profile.get("metadata"))


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else empty: a field of another type prints as absent."""
    return value if isinstance(value, Mapping) else {}


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list field (a profile from a file may hold anything there)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def condition(profile: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    """Return the ``status.conditions`` entry of ``condition_type``, or None."""
    for entry in _entries(_status(profile).get("conditions")):
        if entry.get("type") == condition_type:
            found: Mapping[str, Any] = entry
            return found
    return None


def _condition_status(profile: Mapping[str, Any], condition_type: str) -> str:
    found = condition(profile, condition_type)
    return str(found.get("status", "")) if found else ""


def _providers(profile: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``status.accessProviders`` then the deprecated ``credentialProviders``, one per name.

    Both lists count, and on a name clash the ``accessProviders`` entry wins, as in upstream's
    ``pkg/access`` (:meth:`ClusterProfileStatus.merged_access_providers` for typed profiles;
    here the listed order is kept and malformed entries still print).
    """
    status = _status(profile)
    chosen: dict[str, Mapping[str, Any]] = {}
    for entry in [
        *_entries(status.get("accessProviders")),
        *_entries(status.get("credentialProviders")),
    ]:
        chosen.setdefault(str(entry.get("name", "")), entry)
    return list(chosen.values())


def access_provider_names(profile: Mapping[str, Any]) -> list[str]:
    """Names of :func:`_providers` (access providers, then deprecated credential providers)."""
    return [str(entry["name"]) for entry in _providers(profile) if entry.get("name")]


def properties_text(profile: Mapping[str, Any]) -> str:
    """``status.properties`` as ``name=value`` pairs sorted by name, comma-separated."""
    pairs = sorted(
        (str(p.get("name", "")), str(p.get("value", "")))
        for p in _entries(_status(profile).get("properties"))
    )
    return ",".join(f"{name}={value}" for name, value in pairs)


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
    meta = _meta(profile)
    status = _status(profile)
    manager = _mapping(_mapping(profile.get("spec")).get("clusterManager")).get("name", "")
    row = [
        str(meta.get("name", "")),
        str(manager),
        str(_mapping(status.get("version")).get("kubernetes", "")),
        _condition_status(profile, c.CONDITION_CONTROL_PLANE_HEALTHY),
        ",".join(access_provider_names(profile)),
        age(meta.get("creationTimestamp"), now),
    ]
    if wide:
        row += [_condition_status(profile, c.CONDITION_JOINED), properties_text(profile)]
    if namespace:
        row.insert(0, str(meta.get("namespace", "")))
    return row


def _pairs(values: Mapping[str, Any] | None) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(_mapping(values).items())] or ["<none>"]


def _block(lines: list[str], title: str, headers: Sequence[str], rows: list[list[str]]) -> None:
    """A kubectl describe sub-table: title, headers, dashes, rows; ``<none>`` when empty."""
    if not rows:
        lines.append(f"{title}:  <none>")
        return
    lines.append(f"{title}:")
    table = [list(headers), ["-" * len(h) for h in headers], *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers) - 1)]
    for row in table:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append(("  " + "  ".join([*cells, row[-1]])).rstrip())


def _fields(lines: list[str], pairs: Sequence[tuple[str, Sequence[str]]], indent: str = "") -> None:
    """``Key:  value`` lines aligned on the longest key; further values under the first."""
    width = max(len(key) for key, _ in pairs) + 2
    for key, values in pairs:
        first, *rest = list(values) or ["<none>"]
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
    Events whose ``regarding`` is this profile.

    Args:
        profile: A decoded ClusterProfile.
        events: ``events.k8s.io/v1`` Events about it, oldest first.
        now: The clock for event ages (default: now, UTC).

    Returns:
        The text, ending with a newline.
    """
    meta = _meta(profile)
    spec = _mapping(profile.get("spec"))
    status = _status(profile)
    lines: list[str] = []
    _fields(
        lines,
        [
            ("Name", [str(meta.get("name", ""))]),
            ("Namespace", [str(meta.get("namespace", ""))]),
            ("Labels", _pairs(meta.get("labels"))),
            ("Annotations", _pairs(meta.get("annotations"))),
            ("API Version", [str(profile.get("apiVersion", ""))]),
            ("Kind", [str(profile.get("kind", c.CLUSTER_PROFILE_KIND))]),
            ("Created", [str(meta.get("creationTimestamp", "<unknown>"))]),
            ("Display Name", [str(spec.get("displayName") or "<none>")]),
            ("Cluster Manager", [str(_mapping(spec.get("clusterManager")).get("name", "<none>"))]),
            ("Version", [str(_mapping(status.get("version")).get("kubernetes") or "<none>")]),
        ],
    )
    _block(
        lines,
        "Conditions",
        ("Type", "Status", "Last Transition", "Reason", "Message"),
        [
            _cells(cond, "type", "status", "lastTransitionTime", "reason", "message")
            for cond in _entries(status.get("conditions"))
        ],
    )
    _block(
        lines,
        "Properties",
        ("Name", "Value", "Last Observed"),
        [
            _cells(p, "name", "value", "lastObservedTime")
            for p in sorted(
                _entries(status.get("properties")), key=lambda p: str(p.get("name", ""))
            )
        ],
    )
    providers = _providers(profile)
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
    _block(
        lines,
        "Events",
        ("Type", "Reason", "Age", "From", "Message"),
        [
            [
                str(ev.get("type", "")),
                str(ev.get("reason", "")),
                age(
                    ev.get("eventTime") or (ev.get("metadata") or {}).get("creationTimestamp"), now
                ),
                str(ev.get("reportingController", "")),
                str(ev.get("note", "")),
            ]
            for ev in events
        ],
    )
    return "\n".join(lines) + "\n"


def _cells(entry: Mapping[str, Any], *keys: str) -> list[str]:
    """The values of ``keys`` in ``entry`` as text, "" for a missing one."""
    return [str(entry.get(key, "")) for key in keys]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
