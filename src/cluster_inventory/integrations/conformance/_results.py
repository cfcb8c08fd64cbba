"""A conformance report from plain data: the checks run over what discovery said and the profiles.

:func:`evaluate` is pure; :func:`report` gives the upstream document shape (``Groups`` of
tests, then ``Implementation``, ``Passed`` and ``Total``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api.views import ProfileView
from cluster_inventory.integrations.conformance._checks import CHECKS, DESC_SERVED, DESC_SOME

__all__ = ["Served", "TestResult", "evaluate", "report", "required_failed"]


@dataclass(frozen=True, kw_only=True)
class Served:
    """What discovery said about ClusterProfile v1alpha2 on the hub.

    Attributes:
        served: ``multicluster.x-k8s.io/v1alpha2`` lists ``clusterprofiles``.
        namespaced: That resource is namespaced.
        listable: Listing it in the namespace succeeded.
        error: Why not, for the report (None when all is well).
    """

    served: bool
    namespaced: bool
    listable: bool
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class TestResult:
    """One test of the report (upstream field names in :meth:`to_dict`)."""

    desc: str
    ref: str
    passed: int
    failed: int
    skipped: int
    message: str = ""

    @property
    def conformant(self) -> bool:
        """Nothing failed."""
        return self.failed == 0

    def to_dict(self) -> dict[str, Any]:
        """The upstream report's ``Test`` shape."""
        return {
            "Desc": self.desc,
            "Ref": self.ref,
            "Passed": self.passed,
            "Failed": self.failed,
            "Skipped": self.skipped,
            "Conformant": self.conformant,
            "Message": self.message,
        }


def evaluate(
    served: Served, profiles: Sequence[Mapping[str, Any] | ProfileView]
) -> dict[str, list[TestResult]]:
    """Run every check over the discovery result and the profiles.

    Args:
        served: What discovery and the LIST said (see :func:`run`).
        profiles: The profiles under test (already narrowed to one cluster manager, if asked),
            as stored or already decoded (a reader that holds views does not decode twice).

    Returns:
        ``{"Required": [...], "Optional": [...]}`` in :data:`CHECKS` order.
    """
    groups: dict[str, list[TestResult]] = {"Required": [], "Optional": []}
    views = [p if isinstance(p, ProfileView) else ProfileView.of(p) for p in profiles]
    for check in CHECKS:
        if check.desc == DESC_SERVED:
            ok = served.served and served.namespaced and served.listable
            result = TestResult(
                desc=check.desc,
                ref=check.ref,
                passed=int(ok),
                failed=int(not ok),
                skipped=0,
                message="" if ok else (served.error or "not served"),
            )
        elif check.desc == DESC_SOME:
            result = TestResult(
                desc=check.desc,
                ref=check.ref,
                passed=int(bool(profiles)),
                failed=int(not profiles),
                skipped=0,
                message=f"{len(profiles)} profiles" if profiles else "no ClusterProfile found",
            )
        else:
            assert check.per_profile is not None
            verdicts = [(p, *check.per_profile(p, views)) for p in views]
            failures = [f"{p.key}: {why}" for p, ok, why in verdicts if ok is False]
            result = TestResult(
                desc=check.desc,
                ref=check.ref,
                passed=sum(1 for _, ok, _ in verdicts if ok is True),
                failed=len(failures),
                skipped=sum(1 for _, ok, _ in verdicts if ok is None),
                message="; ".join(failures[:5])
                + (f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""),
            )
        groups[check.group].append(result)
    return groups


def report(
    groups: Mapping[str, Sequence[TestResult]], *, namespace: str, cluster_manager: str | None
) -> dict[str, Any]:
    """The report document (upstream shape), ready for YAML or JSON."""
    tests = [t for group in groups.values() for t in group]
    return {
        "Groups": {name: [t.to_dict() for t in group] for name, group in groups.items()},
        "Implementation": {
            "Namespace": namespace,
            "ClusterManager": cluster_manager or "",
            "Tool": "cluster-inventory conformance",
        },
        "Passed": sum(1 for t in tests if t.conformant),
        "Total": len(tests),
    }


def required_failed(doc: Mapping[str, Any]) -> bool:
    """True if any Required test is not conformant."""
    return any(not t["Conformant"] for t in doc["Groups"]["Required"])
