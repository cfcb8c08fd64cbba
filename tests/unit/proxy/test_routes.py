"""A member's tunnels on one replica: the newest serves, none is cut for a duplicate."""

from __future__ import annotations

from cluster_inventory._clock import utcnow
from cluster_inventory.proxy import Route, Routes
from tests.support.network.tunnels import peer


def _route(member: str) -> Route:
    return Route(peer=peer(member), tunnel=object(), since=utcnow())  # type: ignore[arg-type]


def test_the_newest_tunnel_serves_and_an_older_one_takes_over_when_it_goes() -> None:
    routes = Routes()
    first, second, other = _route("edge-1"), _route("edge-1"), _route("edge-2")
    for r in (first, second, other):
        routes.add(r)
    assert routes.get("edge-1") is second
    assert routes.newest_first("edge-1") == [second, first]
    routes.newest_first("edge-1").clear()  # a copy: the routes stay
    assert routes.newest_first("edge-1") == [second, first]
    assert routes.newest_first("edge-3") == []
    routes.remove(second)  # the duplicate the agent closed
    assert routes.get("edge-1") is first
    routes.remove(first)
    assert routes.get("edge-1") is None
    assert routes.get("edge-2") is other
    routes.remove(first)  # twice: nothing
    assert len(routes) == 1
