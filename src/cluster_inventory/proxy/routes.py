"""Which tunnel reaches which member on this proxy replica.

A member may hold more than one tunnel to a replica for a while: an agent that restarted,
or reconnected before the proxy noticed its old connection die, or that dialled a Service
which led it to a replica it already holds (it closes that one at once). Consumers get the
newest, and the next newest when that one ends under them (the duplicate the agent is
closing: :meth:`Routes.newest_first`); none is closed for another (closing the older would
cut a working tunnel for a duplicate about to go). A tunnel only ever enters under the
name its agent's identity was checked for (:mod:`.peers`), so a name maps to that member's
agents or to nothing.
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
    """Member name -> its routes on this replica, the newest last."""

    def __init__(self) -> None:
        self._by_member: dict[str, list[Route]] = {}

    def __len__(self) -> int:
        return len(self._by_member)

    def __iter__(self) -> Iterator[Route]:
        return iter([r for routes in self._by_member.values() for r in routes])

    def get(self, member: str) -> Route | None:
        """The newest route to ``member``, or None."""
        routes = self._by_member.get(member)
        return routes[-1] if routes else None

    def newest_first(self, member: str) -> list[Route]:
        """The routes to ``member``, the newest first (a copy: an empty list for none)."""
        return self._by_member.get(member, [])[::-1]

    def add(self, route: Route) -> None:
        """Route the member to ``route`` too (the newest)."""
        self._by_member.setdefault(route.peer.member, []).append(route)

    def remove(self, route: Route) -> None:
        """Forget ``route`` (the member's others stay)."""
        routes = self._by_member.get(route.peer.member)
        if routes is None:
            return
        if route in routes:
            routes.remove(route)
        if not routes:
            del self._by_member[route.peer.member]
