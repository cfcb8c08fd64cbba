"""Several registration sources at once, and the one ``manager run --source`` names.

``manager run --source secrets --source capi --source file:PATH`` builds one
:class:`CombinedSource` over the named sources (:func:`parse_source`, :func:`build_source`).
A member name registered by two sources gets its profile from the first source given; the
second is reported as invalid (an Event on its object), never merged silently. One member
reached under two names (the same member id) is the manager's duplicate-member case: one
profile per inventory and a ``DuplicateMember`` Event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.manager.config import ManagerConfig, parse_source
from cluster_inventory.manager.rules.registration import Registration, RegistrationError
from cluster_inventory.manager.sources.capi import ClusterAPISource
from cluster_inventory.manager.sources.file import FileRegistrationSource
from cluster_inventory.manager.sources.secrets import SecretRegistrationSource
from cluster_inventory.manager.sources.source import RegistrationSource, Snapshot

__all__ = ["CombinedSource", "build_source"]


def build_source(hub: kube.ApiClient, config: ManagerConfig) -> RegistrationSource:
    """The registration source ``config.sources`` names (``manager run --source ...``).

    Args:
        hub: Hub client.
        config: The manager's settings: ``sources`` in order of precedence, ``namespace``
            (where registration Secrets live) and the ``capi_*`` settings.

    Raises:
        ValueError: A source is unknown (also checked by :class:`ManagerConfig`).
    """
    sources: list[RegistrationSource] = []
    for spec in config.sources:
        kind, arg = parse_source(spec)
        if kind == "secrets":
            sources.append(SecretRegistrationSource(hub, config.namespace))
        elif kind == "capi":
            sources.append(
                ClusterAPISource(
                    hub,
                    namespaces=config.capi_namespaces,
                    clusterset_label=config.capi_clusterset_label,
                    default_clustersets=config.capi_clustersets,
                )
            )
        else:
            sources.append(FileRegistrationSource(Path(arg)))
    return sources[0] if len(sources) == 1 else CombinedSource(sources)


class CombinedSource:
    """Several sources as one: the first source registering a member name wins.

    Args:
        sources: In order of precedence.
    """

    def __init__(self, sources: Sequence[RegistrationSource]) -> None:
        self.sources = list(sources)

    def start(self, on_change: Callable[[], None]) -> None:
        """Start every source."""
        for source in self.sources:
            source.start(on_change)

    async def wait_synced(self) -> None:
        """Wait for every source's first snapshot.

        Raises:
            SourceUnavailableError: One of the sources cannot be read.
        """
        await asyncio.gather(*(s.wait_synced() for s in self.sources))

    def failures(self) -> list[str]:
        """Every source's read failures."""
        return [f for s in self.sources for f in s.failures()]

    def snapshot(self) -> Snapshot:
        """Merge the snapshots; a name taken by an earlier source is reported as invalid."""
        good: dict[str, Registration] = {}
        bad: list[tuple[dict[str, Any], RegistrationError]] = []
        for source in self.sources:
            regs, invalid = source.snapshot()
            bad.extend(invalid)
            for name, reg in regs.items():
                first = good.get(name)
                if first is None:
                    good[name] = reg
                    continue
                obj: dict[str, Any] = {}
                if reg.regarding is not None:
                    ref = reg.regarding
                    obj = {
                        "apiVersion": ref.get("apiVersion"),
                        "kind": ref.get("kind"),
                        "metadata": {k: ref[k] for k in ("name", "namespace", "uid") if k in ref},
                    }
                bad.append(
                    (
                        obj,
                        RegistrationError(
                            reg.source,
                            "name",
                            f"member name {name!r} is already registered by {first.source}; "
                            "the first source given to --source wins",
                            member=name,
                        ),
                    )
                )
        return good, bad

    async def stop(self) -> None:
        """Stop every source."""
        await asyncio.gather(*(s.stop() for s in self.sources), return_exceptions=True)
