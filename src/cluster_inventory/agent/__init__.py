"""The member agent: a pull-mode member reporting itself to the hub (``docs/agent.md``).

A member the hub cannot reach runs ``cluster-inventory agent``, which works the other way
round, as Open Cluster Management's klusterlet does: it joins the hub, then reports from
inside. This package holds the agent's side; it builds on :mod:`cluster_inventory.api`,
:mod:`cluster_inventory.kube` and :mod:`cluster_inventory.credentials` only, never on the
cluster manager or the runtime.

- :mod:`.report`: what the MemberReport's status says and whether it changed (pure);
- :mod:`.reporter`: :class:`MemberReporter` watches the member and writes that status;
- :mod:`.heartbeat`: :class:`Heartbeat` renews the member's Lease on the hub;
- :mod:`.runner`: :class:`ReportingAgent`, both as one runnable for the process Manager.
"""

from __future__ import annotations

from cluster_inventory.agent.heartbeat import Heartbeat, MemberNotAcceptedError
from cluster_inventory.agent.reporter import MemberReporter
from cluster_inventory.agent.runner import ReportingAgent, ReportingConfig

__all__ = [
    "Heartbeat",
    "MemberNotAcceptedError",
    "MemberReporter",
    "ReportingAgent",
    "ReportingConfig",
]
