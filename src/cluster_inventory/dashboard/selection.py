"""Which member rows the page shows, in which order: a :class:`Query` from the page's controls.

:func:`select` filters (text, label and property selectors, health, inventory) and sorts the
rows of an :class:`~cluster_inventory.dashboard.rows.Overview`. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cluster_inventory.dashboard.rows import HEALTH_ORDER, MemberRow, Overview
from cluster_inventory.integrations.placement import SelectorError, parse_selector
from cluster_inventory.integrations.placement.selectors import matches

__all__ = ["SORT_KEYS", "Query", "Selection", "select"]


#: Sort keys of the member table besides ``property:NAME`` and ``label:KEY``.
SORT_KEYS = ("member", "inventories", "health", "joined", "version", "manager")


@dataclass(frozen=True, kw_only=True)
class Query:
    """The page's controls: which member rows to show, in which order.

    Attributes:
        text: Substring (case-insensitive) of the member's name, its profiles, version,
            managers, labels (``key=value``; not the member id, which the page never shows)
            or property values.
        labels: A label selector (``env=prod,tier!=db``) the member's labels must match.
        properties: The same over its properties (``region in (eu-west-1)``).
        health: ``True``, ``False`` or ``Unknown`` to show only that health; "" for all.
        inventory: Only members of this namespace; "" for all.
        sort: ``member``, ``inventories``, ``health``, ``joined``, ``version``, ``manager``,
            ``property:NAME`` or ``label:KEY``.
        descending: Reverse the order.
    """

    text: str = ""
    labels: str = ""
    properties: str = ""
    health: str = ""
    inventory: str = ""
    sort: str = "member"
    descending: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Query:
        """Read the controls from a request's query string (unknown values read as unset)."""
        health = params.get("health", "")
        sort = params.get("sort", "")
        if sort not in SORT_KEYS and not sort.startswith(("property:", "label:")):
            sort = "member"
        return cls(
            text=params.get("q", "").strip(),
            labels=params.get("labels", "").strip(),
            properties=params.get("properties", "").strip(),
            health=health if health in HEALTH_ORDER else "",
            inventory=params.get("inventory", "").strip(),
            sort=sort,
            descending=params.get("order", "") == "desc",
        )


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The rows a query selects.

    Attributes:
        rows: The matching member rows, in the query's order.
        error: Why a selector could not be read ("" when both parsed).
    """

    rows: tuple[MemberRow, ...]
    error: str = ""


def _sort_value(row: MemberRow, sort: str) -> tuple[int, str]:
    """A key that puts rows without the value last, whatever the direction."""
    kind, _, name = sort.partition(":")
    if kind == "property":
        value = row.properties.get(name)
    elif kind == "label":
        value = row.labels.get(name)
    elif sort == "health":
        value = str(HEALTH_ORDER.index(row.health))
    elif sort == "inventories":
        value = ",".join(row.inventories)
    elif sort == "joined":
        value = row.joined or None
    elif sort == "version":
        value = row.version or None
    elif sort == "manager":
        value = ",".join(row.managers) or None
    else:
        value = row.name
    return (0, value) if value is not None else (1, "")


def _haystack(row: MemberRow) -> str:
    words = [
        row.name,
        row.version,
        *row.managers,
        *(p.key for p in row.profiles),
        *(p.display_name for p in row.profiles),
        *row.shown_labels,  # not the member id: what the page does not show is not searched
        *row.properties.values(),
    ]
    return "\n".join(words).casefold()


def select(overview: Overview, query: Query) -> Selection:
    """Filter and sort the member rows. Pure.

    Args:
        overview: What :func:`build` made.
        query: The controls.

    Returns:
        The rows, and the selector error if one did not parse (the rows are then filtered by
        the other controls only).
    """
    error = ""
    try:
        label_req = parse_selector(query.labels) if query.labels else ()
    except SelectorError as exc:
        label_req, error = (), f"labels: {exc}"
    try:
        property_req = parse_selector(query.properties) if query.properties else ()
    except SelectorError as exc:
        property_req, error = (), f"properties: {exc}"
    text = query.text.casefold()
    rows = [
        r
        for r in overview.members
        if (not query.health or r.health == query.health)
        and (not query.inventory or query.inventory in r.inventories)
        and (not label_req or matches(label_req, r.labels))
        and (not property_req or matches(property_req, r.properties))
        and (not text or text in _haystack(r))
    ]
    present = [r for r in rows if _sort_value(r, query.sort)[0] == 0]
    absent = [r for r in rows if _sort_value(r, query.sort)[0] == 1]
    present.sort(key=lambda r: (_sort_value(r, query.sort)[1], r.ref), reverse=query.descending)
    return Selection(rows=tuple(present + absent), error=error)
