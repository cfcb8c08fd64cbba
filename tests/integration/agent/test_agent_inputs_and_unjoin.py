"""``agent run`` checks every input before it acts; ``agent unjoin`` removes what it keeps.

On the join hub (this directory's conftest: a CSR signer and the cluster manager's
approver). An agent whose ``--state-dir`` cannot be used, or with any other bad flag, exits
with one line naming the flag before a CSR exists on the hub or a file is written; before
these checks, an unwritable state directory was found only after the hub's admin had
accepted the member and its CSR was signed. ``agent unjoin`` is refused while the agent
runs, then removes exactly the state directory's files, and leaves the hub's objects to
``manager reject``.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from pathlib import Path

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.agent import new_private_key
from cluster_inventory.api.agents import new_acceptance_id
from cluster_inventory.manager import ClusterManagerRunnable
from cluster_inventory.manager.admin.agents import Acceptance, accept, reject
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.data.certificates import certificate
from tests.support.hub.agents import JOIN_NS, AgentProcess, agent_csrs
from tests.support.processes.cli import cli


def _files(
    tmp_path: Path, join_hub: ControlPlane, member: ControlPlane, acceptance: Acceptance
) -> dict[str, Path]:
    bootstrap = tmp_path / "bootstrap.yaml"
    boot = join_hub.kubeconfig(acceptance.bootstrap_user, list(acceptance.bootstrap_groups))
    bootstrap.write_text(yaml.safe_dump(boot))
    # Another member's bootstrap credential (an acceptance of "someone-else").
    other = Acceptance(acceptance.namespace, "someone-else", new_acceptance_id())
    foreign = tmp_path / "foreign-bootstrap.yaml"
    foreign.write_text(
        yaml.safe_dump(join_hub.kubeconfig(other.bootstrap_user, list(other.bootstrap_groups)))
    )
    member_kubeconfig = tmp_path / "member.yaml"
    member_kubeconfig.write_text(yaml.safe_dump(member.kubeconfig()))
    ca = tmp_path / "ca.pem"
    ca.write_bytes(member.ca_pem)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    expired = tmp_path / "expired-bootstrap.yaml"
    doc = join_hub.kubeconfig(acceptance.bootstrap_user, list(acceptance.bootstrap_groups))
    doc["users"][0]["user"] = _expired_user()
    expired.write_text(yaml.safe_dump(doc))
    return {
        "bootstrap": bootstrap,
        "foreign": foreign,
        "member": member_kubeconfig,
        "ca": ca,
        "blocker": blocker,
        "expired": expired,
    }


def _expired_user() -> dict[str, str]:
    """A client certificate whose notAfter has passed (what a bootstrap kubeconfig becomes)."""
    key = new_private_key()
    cert = certificate(key, "bootstrap-old", dt.datetime.now(dt.UTC) - dt.timedelta(hours=2), 1)
    return {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }


#: (name, flags to change, the flag named, words of the problem) of each bad input.
BAD_INPUTS = [
    ("state-dir-under-a-file", {"--state-dir": "{blocker}/state"}, "--state-dir", "cannot be created"),
    ("state-dir-is-a-file", {"--state-dir": "{blocker}"}, "--state-dir", "is not a directory"),
    ("plain-http-server", {"--server": "http://10.0.0.10:6443"}, "--server", "scheme https"),
    ("ca-file-not-pem", {"--ca-file": "{member}"}, "--ca-file", "not a PEM certificate"),
    ("ca-file-missing", {"--ca-file": "{blocker}.nope"}, "--ca-file", "No such file"),
    ("proxy-url-scheme", {"--proxy-url": "ftp://bastion:21"}, "--proxy-url", "http or https or socks5"),
    ("name-not-a-label", {"--name": "Edge_1"}, "--name", "not a DNS-1123 label"),
    ("member-kubeconfig-missing", {"--kubeconfig": "{blocker}.nope"}, "--kubeconfig", "nope"),
    ("bootstrap-expired", {"--bootstrap-kubeconfig": "{expired}"}, "--bootstrap-kubeconfig", "expired at"),
    ("bootstrap-of-another-member", {"--bootstrap-kubeconfig": "{foreign}"}, "--bootstrap-kubeconfig", "is not a bootstrap credential of member"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "changes", "flag", "problem"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS]
)
async def test_a_bad_input_fails_naming_its_flag_before_any_csr_or_file(
    join_hub: ControlPlane,
    join_manager: ClusterManagerRunnable,
    join_admin: kube.ApiClient,
    fleet: Fleet,
    tmp_path: Path,
    case: str,
    changes: dict[str, str],
    flag: str,
    problem: str,
) -> None:
    name = f"in-{case}"[:30].rstrip("-")  # an agent member's name: at most 30
    member = next(iter(fleet.members.values()))
    # The member is accepted: a CSR filed now would be approved and signed at once.
    acceptance = await accept(join_admin, JOIN_NS, name if flag != "--name" else "edge-1", ["prod"])
    files = _files(tmp_path, join_hub, member, acceptance)
    try:
        settings = {
            "--name": name,
            "--bootstrap-kubeconfig": str(files["bootstrap"]),
            "--state-dir": str(tmp_path / "state"),
            "--kubeconfig": str(files["member"]),
            "--namespace": JOIN_NS,
            "--server": member.server,
            "--ca-file": str(files["ca"]),
            "--lease-duration": "1",
        }
        settings.update({k: v.format(**files) for k, v in changes.items()})
        args = [part for pair in settings.items() for part in pair]
        run = await asyncio.to_thread(cli, "agent", "run", *args, timeout=60)
        assert run.returncode == 1, run.stderr
        (line,) = run.stderr.splitlines()  # one line, no log, no traceback
        assert line.startswith(f"error: {flag}: "), line
        assert problem in line, line
        assert (
            await agent_csrs(join_admin, name) == []
            and await agent_csrs(join_admin, "edge-1") == []
        )
        if flag != "--state-dir":
            assert not (tmp_path / "state").exists()  # nothing written on the member either
    finally:
        await reject(join_admin, JOIN_NS, name if flag != "--name" else "edge-1")


async def test_unjoin_removes_what_the_agent_keeps_and_leaves_the_hub_to_reject(
    join_hub: ControlPlane,
    join_manager: ClusterManagerRunnable,
    join_admin: kube.ApiClient,
    fleet: Fleet,
    tmp_path: Path,
) -> None:
    name, member = "unjoin-edge", next(iter(fleet.members.values()))
    state = tmp_path / "state"
    files = _files(tmp_path, join_hub, member, await accept(join_admin, JOIN_NS, name, ["prod"]))
    agent = AgentProcess(
        [
            "--name", name,
            "--bootstrap-kubeconfig", str(files["bootstrap"]),
            "--state-dir", str(state),
            "--kubeconfig", str(files["member"]),
            "--namespace", JOIN_NS,
            "--lease-duration", "1",
        ]
    )  # fmt: skip
    try:
        await agent.start()
        await agent.said("hub clients use the certificate")
        busy = await asyncio.to_thread(cli, "agent", "unjoin", "--state-dir", str(state))
        assert busy.returncode == 1
        assert busy.stderr.startswith(f"error: --state-dir: state directory {state}: is in use")
        assert f"(pid {agent.proc.pid if agent.proc else '?'})" in busy.stderr
        assert (state / "agent.key").exists()
        assert await agent.stop() == 0, agent.text

        done = await asyncio.to_thread(cli, "agent", "unjoin", "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[:4] == [
            f"removed {state / 'agent.key'}",
            f"removed {state / 'agent.crt'}",
            f"removed {state / 'kubeconfig'}",
            f"removed {state}/",
        ]
        assert lines[4].startswith(f"member {name}: the agent's identity is gone from this member")
        assert f"cluster-inventory manager reject {name}" in lines[4]
        assert len(lines) == 5
        assert not state.exists()
        # The hub's side is untouched: that is manager reject's.
        for resource, obj in (
            (kube.SECRETS, name),
            (kube.LEASES, name),
            (kube.MEMBER_REPORTS, name),
        ):
            await kube.get(join_admin, resource, obj, JOIN_NS)
        again = await asyncio.to_thread(cli, "agent", "unjoin", "--state-dir", str(state))
        assert again.returncode == 0 and again.stdout == f"nothing of the agent's in {state}\n"
        assert "PRIVATE KEY" not in done.stdout + done.stderr + agent.text
    finally:
        if agent.running:
            await agent.stop()
        await reject(join_admin, JOIN_NS, name)
        for csr in await agent_csrs(join_admin, name):
            await kube.delete(
                join_admin, kube.CERTIFICATE_SIGNING_REQUESTS, csr["metadata"]["name"]
            )
