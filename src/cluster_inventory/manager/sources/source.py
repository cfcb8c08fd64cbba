"""What a registration source is: the manager's one interface to where members are listed.

multicluster-runtime keeps how clusters are found (its ``providers/``) apart from how work
runs on them; the cluster manager's :class:`RegistrationSource` is that interface on the
producer side. The sources are registration Secrets (:mod:`.secrets`), Cluster API
(:mod:`.capi`), a static file and several at once (:mod:`.combined`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from cluster_inventory.manager.rules.registration import Registration, RegistrationError

__all__ = ["RegistrationSource", "Snapshot"]

#: What a source holds now: valid registrations by name, and invalid ones with their object
#: (for an Event) and error.
Snapshot = tuple[dict[str, Registration], list[tuple[dict[str, Any], RegistrationError]]]


class RegistrationSource(Protocol):
    """Something that knows the member clusters; the manager asks it for a snapshot.

    A source that cannot be read is never an empty one: :meth:`wait_synced` raises
    :class:`~cluster_inventory.kube.SourceUnavailableError` when the first read fails for
    good (a missing file, namespace or CRD; a forbidden LIST), and a source that fails later
    keeps its last good snapshot and says so in :meth:`failures` until it reads again.
    """

    def start(self, on_change: Callable[[], None]) -> None:
        """Begin watching; call ``on_change`` whenever the snapshot (or a failure) may differ."""

    async def wait_synced(self) -> None:
        """Return once the first snapshot is complete.

        Raises:
            SourceUnavailableError: The source cannot be read.
        """

    def failures(self) -> list[str]:
        """What cannot be read now (one line each; empty while everything reads)."""

    def snapshot(self) -> Snapshot:
        """Valid registrations by name, and invalid ones with their object and error."""

    async def stop(self) -> None:
        """Stop watching."""
