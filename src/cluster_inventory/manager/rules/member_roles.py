"""Which member ClusterRole an inventory's consumers get: the cluster manager's allow-list. Pure.

An inventory namespace may ask for a member ClusterRole (annotation
``cluster-inventory.dev/member-cluster-role``), but whoever can write a namespace is not who
decides what every member of a cluster set grants: the cluster manager's own configuration
does (``--member-roles SET=ROLE[,ROLE...]``, ``--member-roles-file``, the chart's
``manager.memberRoles``). Per cluster set it lists the roles allowed, the first being the
set's default; a set not listed allows ``--default-member-role`` only (``view``). A namespace
asking for a role its set does not allow gets the set's default role instead, never more, and
a Warning Event says so (``docs/manager.md``). Who may bind a namespace to a set at all is the
hub's RBAC, checked in the API server (the chart's ValidatingAdmissionPolicy), as OCM's
webhook checks ``managedclustersets/bind``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE

__all__ = [
    "MemberRoles",
    "MemberRolesError",
    "RoleDecision",
    "check_role_name",
    "member_roles_of",
    "parse_member_roles",
]


class MemberRolesError(ValueError):
    """A member-role setting that does not parse.

    Attributes:
        source: Where it was given (``--member-roles``, a file's path).
        problem: What is wrong, naming the entry.
    """

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


def check_role_name(role: str) -> str:
    """``role`` if it can name a ClusterRole (a path segment name); else ValueError.

    Raises:
        ValueError: Empty, ``.``/``..``, or containing ``/``, ``%`` or whitespace.
    """
    if not role or role in (".", "..") or any(c in role for c in "/% \t\n"):
        raise ValueError(f"{role!r} is not a ClusterRole name")
    return role


@dataclass(frozen=True, kw_only=True)
class RoleDecision:
    """The member role an inventory gets, and why not the one it asked for.

    Attributes:
        role: The ClusterRole bound on its members, or None: no grant (its consumers get no
            token).
        asked: The role its annotation asks for ("" when it names none).
        refusal: Why ``asked`` is not granted, naming the role, the set and the rule (for a
            Warning Event on the Namespace); None when nothing was refused.
    """

    role: str | None
    asked: str = ""
    refusal: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemberRoles:
    """The allow-list: per cluster set, the member ClusterRoles its inventories may get.

    Attributes:
        by_set: Cluster set -> allowed roles, the first being the set's default.
        default: The one role allowed (and the default) for a set not in ``by_set``; ""
            allows none there.
    """

    by_set: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default: str = "view"

    def __post_init__(self) -> None:
        if self.default:
            check_role_name(self.default)
        for clusterset, roles in self.by_set.items():
            if not roles:
                raise ValueError(f"member roles of cluster set {clusterset!r}: none given")
            for role in roles:
                check_role_name(role)

    def allowed(self, clusterset: str) -> tuple[str, ...]:
        """The roles allowed for ``clusterset``, its default first."""
        if clusterset in self.by_set:
            return tuple(self.by_set[clusterset])
        return (self.default,) if self.default else ()

    def decide(self, namespace: str, clustersets: Iterable[str], asked: str) -> RoleDecision:
        """The role inventory ``namespace`` of ``clustersets`` gets when it asks for ``asked``.

        A role is allowed for an inventory if every one of its sets allows it (one set for a
        labelled namespace; a fixed inventory may name several). The default is the sets'
        default when they agree on one. A role not allowed gets the default instead, so a
        namespace asking for more never gets more than its set allows (OCM's rule of the
        least right: a binding the webhook refuses grants nothing).

        Args:
            namespace: The inventory namespace (for the message).
            clustersets: Its cluster sets (not empty).
            asked: Its annotation's value ("" for none).
        """
        sets = sorted(set(clustersets))
        allowed = [r for r in self.allowed(sets[0]) if all(r in self.allowed(s) for s in sets)]
        defaults = {self.allowed(s)[0] if self.allowed(s) else None for s in sets}
        default = next(iter(defaults)) if len(defaults) == 1 else None
        if asked and asked in allowed:
            return RoleDecision(role=asked, asked=asked)
        if not asked and default is not None:
            return RoleDecision(role=default)
        names = ", ".join(sets)
        rule = (
            f"cluster set {names} allows {', '.join(allowed)}"
            if allowed
            else f"cluster set(s) {names} allow no member role in common"
        )
        if asked:
            problem = f"asks for member ClusterRole {asked!r} ({ANNOTATION_MEMBER_ROLE})"
        else:
            problem = "names no member ClusterRole and its cluster sets have no common default"
        outcome = (
            f"its consumers get {default!r} on each member"
            if default is not None
            else "its consumers get no grant on the members"
        )
        return RoleDecision(
            role=default,
            asked=asked,
            refusal=(
                f"namespace {namespace} {problem}; {rule} (the cluster manager's "
                f"--member-roles): {outcome}"
            ),
        )


def parse_member_roles(
    values: Iterable[str], source: str = "--member-roles"
) -> dict[str, tuple[str, ...]]:
    """``SET=ROLE[,ROLE...]`` values to ``{set: roles}`` (the first role is the default).

    Raises:
        MemberRolesError: A value that is not ``SET=ROLE[,ROLE...]``, a bad role name, or a
            set given twice; the message names the value.
    """
    out: dict[str, tuple[str, ...]] = {}
    for value in values:
        clusterset, sep, roles = value.partition("=")
        names = tuple(r.strip() for r in roles.split(",") if r.strip())
        if not sep or not clusterset or not names:
            raise MemberRolesError(source, f"{value!r} is not SET=ROLE[,ROLE...]")
        if clusterset in out:
            raise MemberRolesError(source, f"cluster set {clusterset!r} is given twice")
        try:
            out[clusterset] = tuple(check_role_name(r) for r in names)
        except ValueError as exc:
            raise MemberRolesError(source, f"{value!r}: {exc}") from None
    return out


def member_roles_of(doc: Any, source: str) -> dict[str, tuple[str, ...]]:
    """The allow-list a decoded YAML document holds: cluster set -> a list of roles.

    ``prod: [view, edit]`` allows ``view`` (the default) and ``edit`` in set ``prod``.

    Args:
        doc: The document (``--member-roles-file``, read by
            :func:`~cluster_inventory.manager.config.read_member_roles_file`).
        source: Where it came from, for messages.

    Raises:
        MemberRolesError: It is not such a mapping, or names a bad role; the message names
            the source and the entry.
    """
    if not isinstance(doc, dict):
        raise MemberRolesError(source, "must be a mapping of cluster set to a list of roles")
    out: dict[str, tuple[str, ...]] = {}
    for clusterset, roles in doc.items():
        if isinstance(roles, str):
            roles = [roles]
        if not isinstance(clusterset, str) or not isinstance(roles, list) or not roles:
            raise MemberRolesError(source, f"{clusterset!r}: must be a list of ClusterRole names")
        try:
            out[clusterset] = tuple(check_role_name(str(r)) for r in roles)
        except ValueError as exc:
            raise MemberRolesError(source, f"{clusterset}: {exc}") from None
    return out
