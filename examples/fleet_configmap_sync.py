"""Keep one ConfigMap of the hub in sync on every engaged member cluster.

The controller is :class:`cluster_inventory.runtime.configmap_sync.ConfigMapSync` (read
it: about 80 lines on :mod:`cluster_inventory.runtime`); this program wires it up:

- the fleet manager engages every ready ClusterProfile of the inventory namespace(s) and
  reaches its member through the consumer's provider file (the exec plugin);
- a reconciler for ``v1/ConfigMap`` in the target namespace of each member writes the hub's
  data there with server-side apply, and deletes the copy if the hub's ConfigMap is gone;
- a hub watch on the source ConfigMap queues it on every cluster when it changes, an engage
  hook queues it on each newly engaged cluster, and the member watch puts back any copy
  edited or deleted by hand.

Run it with a provider file (README.md shows one for the local fleet of
``cluster_inventory.testing``); the hub is found as kubectl finds it (``--hub-kubeconfig``,
else ``$KUBECONFIG``, in-cluster, ``~/.kube/config``)::

    python examples/fleet_configmap_sync.py --hub-kubeconfig hub.yaml
      --provider-file providers.json --inventory-namespace team-a
      --source cluster-inventory-system/fleet-settings --target-namespace default

(one command line). Stop it with Ctrl-C: it disengages every cluster and exits.

To spread the clusters over several copies of this program, give each
``--sharding LEASE-NAMESPACE`` (and the same ``--name``): every copy keeps a Lease in that
hub namespace and engages only the clusters rendezvous hashing gives it; when one stops or
dies, the others take its clusters (docs/runtime.md, "Sharing clusters among replicas").
The identity of a copy is ``$POD_NAME``, else ``<hostname>_<pid>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging

from cluster_inventory import kube
from cluster_inventory.controller import Manager, ShardConfig
from cluster_inventory.kube.endpoints import default_identity
from cluster_inventory.runtime import FleetManager
from cluster_inventory.runtime.configmap_sync import ConfigMapSync

__all__ = ["ConfigMapSync", "main"]


async def main(argv: list[str] | None = None) -> None:
    """Parse arguments and run until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub-kubeconfig")
    parser.add_argument("--hub-context")
    parser.add_argument("--provider-file", required=True)
    parser.add_argument("--inventory-namespace", action="append", dest="namespaces")
    parser.add_argument("--source", required=True, help="NAMESPACE/NAME of the hub ConfigMap")
    parser.add_argument("--target-namespace", default="default")
    parser.add_argument(
        "--name", default="fleet-configmap-sync", help="shard group of the copies (--sharding)"
    )
    parser.add_argument(
        "--sharding",
        metavar="LEASE_NAMESPACE",
        help="share the clusters with the other copies of the same --name; their Leases "
        "live in this hub namespace",
    )
    args = parser.parse_args(argv)
    source_namespace, _, name = args.source.partition("/")
    if not name:
        parser.error("--source must be NAMESPACE/NAME")
    shard = (
        ShardConfig(namespace=args.sharding, group=args.name, identity=default_identity())
        if args.sharding
        else None
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    connection = kube.load_connection(args.hub_kubeconfig, context=args.hub_context)

    def fleet(hub: kube.ApiClient) -> FleetManager:
        made = FleetManager(hub, args.provider_file, namespaces=args.namespaces)
        ConfigMapSync(made, source_namespace, name, args.target_namespace)
        return made

    # One process Manager (cluster_inventory.controller): the hub client, SIGINT/SIGTERM,
    # and, given lease=LeaderElectionConfig(...), health=... and metrics=..., a Lease and
    # the /healthz, /readyz and /metrics endpoints; given shard=ShardConfig(...), a Lease
    # per copy and only this copy's share of the clusters.
    with contextlib.suppress(asyncio.CancelledError):
        await Manager(connection, shard=shard).add(fleet).run(handle_signals=True)


if __name__ == "__main__":
    kube.run(main())  # uvloop when installed: about 80 KiB per member watch, not 360
