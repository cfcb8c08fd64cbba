"""Network faults and paths between our processes and the fleet's servers.

- :mod:`.toxiproxy`: Shopify's Toxiproxy in front of one server, to break that one path;
- :mod:`.faults`: the network fault matrix (issue 32) built on it, and its tally;
- :mod:`.tarpit`: a server that accepts connections and never answers;
- :mod:`.proxies`: SOCKS5 and HTTP CONNECT forward proxies that record their tunnels;
- :mod:`.netns`: a member cluster in a network namespace of the test's own
  (``python -m tests.support.network.netns`` is the process inside it).
"""
