"""What a sync's pure ``assign`` and ``render`` hand the mirror loop: assignments and errors."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Assignment", "RenderError", "RenderPending"]


class RenderError(Exception):
    """A profile cannot be turned into its target object.

    Args:
        profile: ``namespace/name`` of the ClusterProfile.
        field: The profile (or provider file) field at fault, e.g.
            ``status.accessProviders[name=secretreader].cluster.certificate-authority-data``.
        problem: What is wrong with it; never a credential.

    Attributes:
        profile: As given.
        field: As given.
        problem: As given.
    """

    def __init__(self, profile: str, field: str, problem: str) -> None:
        super().__init__(f"ClusterProfile {profile}: {field}: {problem}")
        self.profile = profile
        self.field = field
        self.problem = problem


class RenderPending(RenderError):
    """A profile cannot be rendered *yet*: a normal transient, not a fault.

    E.g. its member has not joined, so no access provider is published. The target is not
    written, a Normal Event (reason ``Pending``) says why, and the profile's next update
    queues it again.
    """


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """Which profile a target object is rendered from.

    Attributes:
        profile: ``namespace/name`` of the ClusterProfile.
        display_name: The name the consumer shows (e.g. Argo CD's ``data.name``).
    """

    profile: str
    display_name: str
