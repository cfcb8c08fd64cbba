"""The agent member controller: each agent member observed again when its report or Lease moves.

One key per member name (``docs/agent.md``, "The hub side"). A change of a member's MemberReport or
heartbeat Lease refreshes its :class:`~cluster_inventory.manager.members.agent_member.AgentMember`
in the member pool, whose observation then flows to its profiles as a probed member's does; a
reconcile asks to run again when the heartbeat would go stale, so the expiry is timed, not polled. A
report whose fields were refused gets a Warning Event, once per set of refusals
(:meth:`~.findings.ManagerFindings.report_problems`). Members another replica holds (or none holds)
are not in this replica's pool: their reconcile does nothing.
"""

from __future__ import annotations

from cluster_inventory.controller import Controller, Result
from cluster_inventory.manager.controllers.findings import ManagerFindings
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.members.agent_member import AgentMember
from cluster_inventory.manager.members.agent_reports import AgentReports
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.member_keys import AgentMemberKey

__all__ = ["NAME", "AgentMemberController"]

#: The controller's name (its work queue and metrics).
NAME = "clustermanager-agents"


class AgentMemberController:
    """Reconciles agent members by name, from the hub's reports and heartbeats.

    Args:
        hub: The hub view (settings, metrics).
        reports: The hub's MemberReports and heartbeat Leases (both caches are watched).
        members: The member pool (the agent members this replica holds).
        findings: Where a report's refused fields are told (a Warning Event on it).

    Attributes:
        controller: The controller running :meth:`reconcile` (one worker).
    """

    def __init__(
        self,
        hub: HubView,
        reports: AgentReports,
        members: MemberPool,
        findings: ManagerFindings,
    ) -> None:
        self.reports = reports
        self.members = members
        self.findings = findings
        self.controller: Controller[str] = (
            hub.controller(NAME, self.reconcile)
            .watch(reports.reports, reports.keys)
            .watch(reports.leases, reports.lease_keys)
        )
        reports.on_resume(self._look_again)

    def _look_again(self) -> None:
        """After a break of the Lease watch every member needs its expiry timed again."""
        for name in self.reports.names():
            self.controller.queue.add(name)

    async def reconcile(self, name: str) -> Result | None:
        """Observe agent member ``name`` again; requeued for when its heartbeat goes stale.

        Its report's refused fields, if any, become a Warning Event (best effort).
        """
        found = self.members.get(AgentMemberKey(self.reports.namespace, name))
        if not isinstance(found, AgentMember):
            return None
        fresh_for = found.refresh()
        await self.findings.report_problems(self.reports.report(name), found.checked)
        return None if fresh_for is None else Result(requeue_after=fresh_for)
