"""The conformance rules: one :class:`Check` per rule, each a pure function of the profiles.

The Required and Optional checks of the upstream suite (cluster-inventory-api PR #78) and
KEP-4322's own rules, in report order (:data:`CHECKS`). A rule sees one decoded profile and
every profile under test, and answers pass, fail (with why) or skip.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.api.views import ProfileView

__all__ = ["CHECKS", "DESC_SERVED", "DESC_SOME", "Check", "Verdict"]

_KEP = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/4322-cluster-inventory"
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.")
_SECRET_KEYS = re.compile(r"(^|[-_.])(token|password|passwd|secret|client-key|private-?key)", re.I)


# A per-profile verdict: True passed, False failed (with why), None skipped.
Verdict = tuple[bool | None, str]


@dataclass(frozen=True)
class Check:
    """A rule checked on every profile (or once, on the API).

    Attributes:
        group: ``Required`` or ``Optional``.
        desc: What the rule says.
        ref: Where it comes from.
        per_profile: The verdict for one profile, given every profile under test; None for
            the two API-level checks. Rules about what a profile stores read ``view.raw``.
    """

    group: str
    desc: str
    ref: str
    per_profile: Callable[[ProfileView, Sequence[ProfileView]], Verdict] | None = field(
        default=None
    )


def _manager_label(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    label, spec = p.manager_label, p.cluster_manager
    if label == spec and label:
        return True, ""
    return False, f"label {LABEL_CLUSTER_MANAGER}={label!r} but spec.clusterManager.name={spec!r}"


def _member_id_non_empty(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    if LABEL_INVENTORY_MEMBER_ID not in p.labels:
        return None, ""
    if p.member_id:
        return True, ""
    return False, f"label {LABEL_INVENTORY_MEMBER_ID} is empty"


def _member_id_set(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    if p.member_id:
        return True, ""
    return False, f"label {LABEL_INVENTORY_MEMBER_ID} is missing or empty"


# The last profile list indexed by (namespace, member id), so that the check is linear in the
# inventory, not quadratic (every check over 5,000 profiles: 2.96 s before, 0.25 s with it).
# ``evaluate`` hands one list to every call; the list is held, so its id cannot be reused.
_member_index: tuple[Sequence[ProfileView], dict[tuple[str, str], list[ProfileView]]] | None = None


def _members_of(every: Sequence[ProfileView]) -> dict[tuple[str, str], list[ProfileView]]:
    global _member_index
    if _member_index is None or _member_index[0] is not every:
        index: dict[tuple[str, str], list[ProfileView]] = {}
        for o in every:
            if o.member_id:
                index.setdefault((o.namespace, o.member_id), []).append(o)
        _member_index = (every, index)
    return _member_index[1]


def _member_id_unique(p: ProfileView, every: Sequence[ProfileView]) -> Verdict:
    if not p.member_id:
        return None, ""
    same = _members_of(every).get((p.namespace, p.member_id), [])
    others = sorted(o.name for o in same if o is not p)
    if not others:
        return True, ""
    return False, f"member id {p.member_id} is also on {', '.join(others)}"


def _conditions_present(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    wanted = (CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED)
    missing = [t for t in wanted if p.condition(t) is None]
    return (False, f"no {' and no '.join(missing)} condition") if missing else (True, "")


def _version_set(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    if p.version:
        return True, ""
    return False, "status.version.kubernetes is empty"


def _secret_paths(node: Any, path: str) -> Iterable[str]:
    """Where ``node`` holds something that looks like a credential."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}"
            if _SECRET_KEYS.search(str(key)) and value not in (None, "", {}, []):
                yield here
            yield from _secret_paths(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _secret_paths(value, f"{path}[{i}]")
    elif isinstance(node, str):
        if _JWT.search(node) or "PRIVATE KEY" in node:
            yield path


def _ca_holds_a_key(cluster: Mapping[str, Any]) -> bool:
    data = cluster.get("certificate-authority-data")
    if not isinstance(data, str):
        return False
    try:
        return b"PRIVATE KEY" in base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return False


def _stored(p: ProfileView, field_name: str) -> list[Mapping[str, Any]]:
    """``status.<field_name>`` as stored (duplicates too): rules judge what the view hides."""
    value = objects.status(p.raw).get(field_name)
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _providers(p: ProfileView) -> list[tuple[str, Mapping[str, Any]]]:
    """Every stored access provider with its place (both lists, duplicates too)."""
    return [
        (f"status.{field_name}[{i}]", provider)
        for field_name in ("accessProviders", "credentialProviders")
        for i, provider in enumerate(_stored(p, field_name))
    ]


def _no_credentials(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    body = {k: v for k, v in p.raw.items() if k != "metadata"}
    meta = {"labels": objects.labels_of(p.raw), "annotations": objects.annotations_of(p.raw)}
    found = list(dict.fromkeys([*_secret_paths(body, ""), *_secret_paths(meta, ".metadata")]))
    found += [
        f"{where}.cluster.certificate-authority-data"
        for where, provider in _providers(p)
        if _ca_holds_a_key(provider.get("cluster") or {})
    ]
    if found:
        return False, f"credential-looking data at {', '.join(x.lstrip('.') for x in found[:3])}"
    return True, ""


def _providers_secret_free(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    providers = _providers(p)
    if not providers:
        return None, ""
    for where, provider in providers:
        cluster = provider.get("cluster") or {}
        if not cluster.get("server"):
            return False, f"{where} has no cluster.server"
        inline = [
            k for k in ("token", "client-key-data", "client-certificate-data") if k in cluster
        ]
        if inline or list(_secret_paths(cluster.get("extensions") or [], "")):
            return False, f"{where} carries an inline credential"
    return True, ""


def _properties_within_limits(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    props = _stored(p, "properties")
    if not props:
        return None, ""
    names = Counter(str(x.get("name", "")) for x in props)
    for prop in props:
        name, value = str(prop.get("name", "")), str(prop.get("value", ""))
        if not 1 <= len(name) <= 253:
            return False, f"property name {name[:40]!r} is not 1-253 characters"
        if not 1 <= len(value) <= 1024:
            return False, f"property {name} value is not 1-1024 characters"
        if names[name] > 1:
            return False, f"property {name} appears {names[name]} times"
    return True, ""


def _actionable_conditions(p: ProfileView, _: Sequence[ProfileView]) -> Verdict:
    conds = _stored(p, "conditions")
    if not conds:
        return None, ""
    bare = [str(c.get("type")) for c in conds if not c.get("reason") or not c.get("message")]
    if bare:
        return False, f"condition {', '.join(bare)} without reason or message"
    return True, ""


DESC_SERVED = "v1alpha2 ClusterProfile is served, listable and namespaced"
DESC_SOME = "the inventory namespace has at least one ClusterProfile"

#: Every check, in report order.
CHECKS: tuple[Check, ...] = (
    Check("Required", DESC_SERVED, "cluster-inventory-api v1alpha2"),
    Check("Required", DESC_SOME, f"{_KEP}#cluster-inventory"),
    Check(
        "Required",
        f"label {LABEL_CLUSTER_MANAGER} equals spec.clusterManager.name",
        f"{_KEP}#cluster-manager",
        _manager_label,
    ),
    Check(
        "Required",
        f"a present {LABEL_INVENTORY_MEMBER_ID} label is non-empty",
        "cluster-inventory-api#83",
        _member_id_non_empty,
    ),
    Check(
        "Optional",
        f"{LABEL_INVENTORY_MEMBER_ID} label is set",
        "cluster-inventory-api#83",
        _member_id_set,
    ),
    Check(
        "Optional",
        "each member id appears at most once per namespace",
        "kubernetes/enhancements#6237",
        _member_id_unique,
    ),
    Check(
        "Optional",
        f"{CONDITION_CONTROL_PLANE_HEALTHY} and {CONDITION_JOINED} conditions are present",
        f"{_KEP}#status",
        _conditions_present,
    ),
    Check(
        "Optional",
        "status.version.kubernetes is set",
        f"{_KEP}#status",
        _version_set,
    ),
    Check(
        "Optional",
        "no credential in any profile (KEP-4322)",
        f"{_KEP}#security-concerns",
        _no_credentials,
    ),
    Check(
        "Optional",
        "access providers name a server and carry no secret (KEP-4322)",
        f"{_KEP}#access-providers",
        _providers_secret_free,
    ),
    Check(
        "Optional",
        "properties are unique and within the API's limits (KEP-4322)",
        f"{_KEP}#properties",
        _properties_within_limits,
    ),
    Check(
        "Optional",
        "every condition has a reason and a message (KEP-4322)",
        f"{_KEP}#status",
        _actionable_conditions,
    ),
)
