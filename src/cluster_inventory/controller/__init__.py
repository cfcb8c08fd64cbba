"""The controller layer: one typed Controller and one process Manager.

controller-runtime's ``pkg/reconcile``, ``pkg/controller`` and ``pkg/manager`` in this
project's terms, above ``kube`` (client-go's part: client, informer, work queue, Lease,
events) and below every long-running component (the cluster manager, the runtime, the syncs,
the placement scheduler, delivery):

- :class:`Result`, :class:`TerminalError`, :class:`RequestDropped`: what a reconcile returns.
- :class:`Workers`: the one place reconcile workers start (backoff, metrics).
- :class:`Controller`: caches with map functions feeding one typed work queue;
  :class:`Channel`: events no cache sees, mapped to keys the same way.
- :class:`Manager` and :class:`Runnable`: a process (hub client, leader election, probes,
  metrics, signals) running controllers.
- :class:`ShardConfig` and :class:`ShardMembership`: replicas sharing members (a Lease per
  replica, rendezvous hashing; ``docs/scale.md``).
- :class:`ProfileConditionCollector`: kube-state-metrics-style series of the profiles a
  process holds (``docs/observability.md``); :class:`ProfileSeries`: the one per registry.

See ``docs/architecture.md`` for the picture.
"""

from cluster_inventory.controller.channel import Channel
from cluster_inventory.controller.controller import Controller, MapFunc
from cluster_inventory.controller.manager import LeaderElectedRunnable, Manager, Runnable
from cluster_inventory.controller.profile_series import ProfileConditionCollector, ProfileSeries
from cluster_inventory.controller.reconcile import (
    DEFAULT_GRACEFUL_SHUTDOWN,
    RequestDropped,
    Result,
    TerminalError,
    Workers,
    reconcile_loop,
)
from cluster_inventory.controller.sharding import ShardConfig, ShardMembership

__all__ = [
    "DEFAULT_GRACEFUL_SHUTDOWN",
    "Channel",
    "Controller",
    "LeaderElectedRunnable",
    "Manager",
    "MapFunc",
    "ProfileConditionCollector",
    "ProfileSeries",
    "RequestDropped",
    "Result",
    "Runnable",
    "ShardConfig",
    "ShardMembership",
    "TerminalError",
    "Workers",
    "reconcile_loop",
]
