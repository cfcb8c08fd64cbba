"""The cluster proxy: consumers reach agent members through the agents' outbound tunnels.

A member behind NAT runs an agent that dials out to the hub; with ``agent run
--proxy-server`` it also keeps a tunnel to each replica of ``cluster-inventory proxy run``,
and the cluster manager gives the member's ClusterProfiles an access provider that goes
through it: ``proxy-url`` ``http://NAME@PROXY`` (CONNECT to the proxy, the member as its
user), ``server`` a name the member's certificate holds and the member's CA, so TLS runs end
to end from the consumer to the member's API server (``docs/cluster-proxy.md``). OCM's
cluster-proxy addon plays this role with apiserver-network-proxy; here it is one component
and the agent the project already has.

- :mod:`.wire`: the framing over a tunnel (pure);
- :mod:`.tunnel`: :class:`Tunnel`, streams multiplexed over one aiohttp WebSocket, with
  per-stream credit (both ends);
- :mod:`.peers`: who an agent is, as the hub says (client certificate or TokenReview, then
  a SubjectAccessReview), and the one member it may serve;
- :mod:`.routes`: which tunnel reaches which member on a replica;
- :mod:`.connect`: the consumers' CONNECT listener (targets are connected members by name);
- :mod:`.server`: :class:`ClusterProxy`, both listeners as one runnable;
- :mod:`.metrics`: :class:`ProxyMetrics`, what a replica counts (no per-member series);
- :mod:`.dial`: the agent's side of the handshake (its TLS and headers).
"""

from __future__ import annotations

from cluster_inventory.proxy.connect import (
    MEMBER_PORT,
    ConnectRefused,
    ConnectServer,
    connect_target,
    member_proxy_url,
)
from cluster_inventory.proxy.dial import TunnelRefused, dial
from cluster_inventory.proxy.metrics import ProxyMetrics
from cluster_inventory.proxy.peers import (
    AgentPeer,
    AgentRefused,
    Authenticator,
    certificate_identity,
    claim_problem,
)
from cluster_inventory.proxy.routes import Route, Routes
from cluster_inventory.proxy.server import (
    HEADER_SERVER_COUNT,
    HEADER_SERVER_ID,
    TUNNEL_PATH,
    ClusterProxy,
    ProxyConfig,
    hub_client_ca,
)
from cluster_inventory.proxy.tunnel import StreamRefused, Tunnel

__all__ = [
    "HEADER_SERVER_COUNT",
    "HEADER_SERVER_ID",
    "MEMBER_PORT",
    "TUNNEL_PATH",
    "AgentPeer",
    "AgentRefused",
    "Authenticator",
    "ClusterProxy",
    "ConnectRefused",
    "ConnectServer",
    "ProxyConfig",
    "ProxyMetrics",
    "Route",
    "Routes",
    "StreamRefused",
    "Tunnel",
    "TunnelRefused",
    "certificate_identity",
    "claim_problem",
    "connect_target",
    "dial",
    "hub_client_ca",
    "member_proxy_url",
    "member_server",
]


def member_server(name: str) -> str:
    """``https://NAME``: a ``server`` whose CONNECT target ``NAME:443`` names the member.

    For a member whose certificate name is not known (its agent reported no
    ``tlsServerName``); else the profile names it as the proxy's user
    (:func:`member_proxy_url`) and ``server`` is that certificate name.
    """
    return f"https://{name}"
