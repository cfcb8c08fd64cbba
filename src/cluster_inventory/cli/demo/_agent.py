"""Step 2b: one member joins in pull mode, by its agent (``docs/agent.md``, "Joining").

What a hub admin and a member admin do for a member the hub cannot reach, on the demo's
fleet (whose hub signs agent certificates: ``Fleet(agent_join=True)``): the hub admin
accepts the member (``manager accept``) and issues the expiring bootstrap kubeconfig of that
acceptance (``manager bootstrap-kubeconfig --member``'s library call); the member admin
makes the ServiceAccount the agent keeps its consumers' token for, and runs
``cluster-inventory agent run`` as a process of its own. The cluster manager, started next,
approves the agent's CSR, and the member's profile comes from what its agent reports: no
kubeconfig of it is ever given to the hub.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import DEFAULT_CONSUMER_SERVICE_ACCOUNT
from cluster_inventory.cli._files import write_private
from cluster_inventory.cli.demo._isolated import IsolatedMember
from cluster_inventory.cli.demo._plan import MANAGER_NAMESPACE, DemoMember, DemoRun, manifest
from cluster_inventory.manager.admin.agent_bootstrap import issue_bootstrap_kubeconfig
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import ManagedProcess

__all__ = ["AGENT_LEASE_SECONDS", "agent_log", "agent_member", "join_by_agent"]

#: The demo agent's heartbeat Lease duration (the manager calls it Unknown after 5 of them).
AGENT_LEASE_SECONDS = 10
#: The member's namespace holding the consumers' ServiceAccount (the chart's default name).
_CONSUMER_NAMESPACE = "cluster-inventory-system"


def agent_member(members: list[DemoMember]) -> DemoMember | None:
    """The member that joins by its agent: the last one in the staging cluster set only.

    Its inventory (team-b) is only read by the demo's steps, so the consumer steps on the
    first inventory, which write to members, are not changed by it. None under 3 members.
    """
    staging_only = [m for m in members if m.clustersets == ("staging",)]
    return staging_only[-1] if staging_only else None


async def join_by_agent(
    demo: DemoRun, hub: kube.ApiClient, member: DemoMember, isolated: IsolatedMember | None
) -> ManagedProcess:
    """Accept the member, issue its bootstrap kubeconfig, start the agent.

    With ``isolated`` the member and its agent run in the member's own network namespace
    and the agent keeps a tunnel to the hub's cluster proxy; otherwise both are on the
    host's loopback.

    Returns:
        The running agent (stopped with the fleet, or with the namespace).

    Raises:
        CertificateRequestError: The hub did not sign the bootstrap credential.
        KubeAPIError: A write was refused.
    """
    home = demo.fleet.workdir / f"agent-{member.name}"
    home.mkdir(parents=True, exist_ok=True)
    acceptance = await accept(hub, MANAGER_NAMESPACE, member.name, list(member.clustersets))
    issued = await issue_bootstrap_kubeconfig(
        hub, demo.fleet.hub.connection(), acceptance, expiration_seconds=3600
    )
    bootstrap = home / "bootstrap.kubeconfig"
    write_private(bootstrap, json.dumps(issued.kubeconfig, indent=2) + "\n")
    await demo.apply_on_member(member.name, _consumer_account())
    if isolated is None:
        cp = demo.fleet.member(member.name)
        server, kubeconfig, ca_pem = cp.server, cp.kubeconfig_path, cp.ca_pem
    else:
        ns = isolated.ns
        server, kubeconfig, ca_pem = ns.server, ns.kubeconfig_path, ns.ca_pem
    ca_file = home / "member-ca.pem"
    ca_file.write_bytes(ca_pem)
    argv = [
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        "agent",
        "run",
        f"--name={member.name}",
        f"--bootstrap-kubeconfig={bootstrap}",
        f"--state-dir={home / 'state'}",
        f"--kubeconfig={kubeconfig}",
        f"--namespace={MANAGER_NAMESPACE}",
        f"--server={server}",
        f"--ca-file={ca_file}",
        f"--lease-duration={AGENT_LEASE_SECONDS}",
        "--probe-interval=1",
        f"--consumer-service-account={_CONSUMER_NAMESPACE}/{DEFAULT_CONSUMER_SERVICE_ACCOUNT}",
    ]
    if isolated is not None:
        return isolated.ns.start(
            f"agent-{member.name}", argv + isolated.agent_flags(), home / "agent.log"
        )
    agent = ManagedProcess(
        f"agent-{member.name}", argv, home / "agent.log", detach=demo.fleet.detach
    )
    agent.start()
    demo.fleet.adopt(agent)
    return agent


def _consumer_account() -> list[dict[str, Any]]:
    """The member admin's part: the consumers' ServiceAccount, bound to ``view``.

    What consumers may do on an agent member is its admin's choice (``docs/agent.md``,
    "The consumers' credential"); the demo's second inventory reads (``view``).
    """
    meta = {"name": DEFAULT_CONSUMER_SERVICE_ACCOUNT, "namespace": _CONSUMER_NAMESPACE}
    binding = {
        "metadata": {"name": f"{DEFAULT_CONSUMER_SERVICE_ACCOUNT}-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", **meta}],
    }
    return [
        manifest(kube.NAMESPACES, {"metadata": {"name": _CONSUMER_NAMESPACE}}),
        manifest(kube.SERVICE_ACCOUNTS, {"metadata": meta}),
        manifest(kube.CLUSTER_ROLE_BINDINGS, binding),
    ]


def agent_log(demo: DemoRun, member: DemoMember) -> Path:
    """Where the member's agent writes its log."""
    return demo.fleet.workdir / f"agent-{member.name}" / "agent.log"
