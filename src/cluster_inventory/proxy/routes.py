"""Which tunnel reaches which member on this proxy replica.

One tunnel per member per replica: a second tunnel of the same verified identity (an agent
that restarted, or reconnected before the proxy noticed the old connection die) replaces
the first, which is closed. A tunnel only ever enters under the name its agent's identity
was checked for (:mod:`.peers`), so a name maps to that member's agent or to nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from cluster_inventory.proxy.peers import AgentPeer
from cluster_inventory.proxy.tunnel import Tunnel

__all__ = ["Route", "Routes"]


@dataclass(frozen=True, eq=False)
class Route:
    """A member's tunnel and the agent the hub vouched for on it.

    Attributes:
        peer: The agent.
        tunnel: Its tunnel.
        since: When it was connected.
    """

    peer: AgentPeer
    tunnel: Tunnel
    since: dt.datetime


class Routes:
    """Member name -> its current route on this replica."""

    def __init__(self) -> None:
        self._by_member: dict[str, Route] = {}

    def __len__(self) -> int:
        return len(self._by_member)

    def __iter__(self) -> Iterator[Route]:
        return iter(list(self._by_member.values()))

    def get(self, member: str) -> Route | None:
        """The route to ``member``, or None."""
        return self._by_member.get(member)

    def add(self, route: Route) -> Route | None:
        """Route the member to ``route``; returns the route it replaced (to close), or None."""
        old = self._by_member.get(route.peer.member)
        self._by_member[route.peer.member] = route
        return old

    def remove(self, route: Route) -> None:
        """Forget ``route`` if it is still the member's (a replaced one is left alone)."""
        if self._by_member.get(route.peer.member) is route:
            del self._by_member[route.peer.member]
