"""docs/agent.md's step-by-step join on ``fleet up``: every ``$`` command, run as written.

The section's console block is the script: its ``$`` lines (with their ``\\`` continuations)
run in one bash with ``set -euo pipefail``, in order, as a new user would type them, in a
home directory of the test's own (``~/.cache/cluster-inventory`` there; the control-plane
binaries linked in, so nothing is built). A command that fails fails the test. What they
print is checked against what the section says they print. Whatever the script started (the
kept fleet, the manager and the agent in the background) is stopped afterwards, also when
it failed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from cluster_inventory.testing import assets_dir
from tests.support.processes.pids import alive, wait_dead

DOC = Path(__file__).resolve().parents[3] / "docs" / "agent.md"
SECTION = "## Join a member on a local fleet, step by step"


def doc_commands(text: str = DOC.read_text()) -> list[str]:
    """The ``$`` commands of the section's first console block, continuations joined."""
    section = text.split(SECTION, 1)[1]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None, f"{DOC}: no console block under {SECTION!r}"
    commands: list[str] = []
    continued = False
    for line in block.group(1).splitlines():
        if continued:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continued = line.endswith("\\")
    return commands


def _stop_group(pgid: int) -> None:
    """SIGTERM the script's process group (its background jobs), SIGKILL what outlives 20 s."""
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _started_under(root: Path) -> list[int]:
    """Running processes whose command line names a path under ``root`` (the fleet's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(root) in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_the_section_has_the_commands_of_a_whole_join() -> None:
    words = [c.split()[:3] for c in doc_commands()]
    wanted = [
        ["cluster-inventory", "fleet", "up"],
        ["cluster-inventory", "manager", "accept"],  # first: a bootstrap joins one acceptance
        ["cluster-inventory", "manager", "bootstrap-kubeconfig"],
        ["cluster-inventory", "agent", "run"],
        ["cluster-inventory", "manager", "agents"],
        ["cluster-inventory", "agent", "unjoin"],
        ["cluster-inventory", "manager", "reject"],
        ["cluster-inventory", "fleet", "down"],
    ]
    assert [w for w in words if w in wanted] == wanted


def test_the_docs_join_works_verbatim_on_fleet_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cache = home / ".cache" / "cluster-inventory"
    (cache / "assets").mkdir(parents=True)
    (cache / "assets" / assets_dir().name).symlink_to(assets_dir())
    work = tmp_path / "work"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"KUBECONFIG", "CLUSTER_INVENTORY_CACHE_DIR", "XDG_CACHE_HOME"}
        and not k.startswith(("TEST_ASSET_", "KUBEBUILDER_ASSETS"))
    }
    env |= {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = "set -euo pipefail\n" + "\n".join(doc_commands()) + "\n"
    proc = subprocess.Popen(
        ["bash", "-c", script],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its background jobs are one process group with it
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        with_fleet = (cache / "fleet" / "fleet.json").exists()
        if with_fleet:  # it failed before `fleet down`: stop what it kept
            subprocess.run(
                [sys.executable, "-m", "cluster_inventory.cli", "fleet", "down"],
                env=env,
                capture_output=True,
                timeout=120,
                check=False,
            )
        _stop_group(proc.pid)
        proc.wait(timeout=60)
    logs = {name: (work / name).read_text() for name in ("agent.log", "manager.log")}
    assert proc.returncode == 0, f"{err[-3000:]}\nagent.log:\n{logs['agent.log'][-3000:]}"
    assert not with_fleet
    assert "member member1 accepted in cluster-inventory-system (cluster sets: prod)" in out
    handed = (
        "  cluster-inventory agent run --name member1 --bootstrap-kubeconfig bootstrap.kubeconfig"
    )
    assert handed in out.splitlines()  # the line `bootstrap-kubeconfig` prints to hand over
    agents = next(
        line for line in out.splitlines() if line.startswith("member1 ") and "yes" in line
    )
    assert agents.split()[2:4] == ["yes", "True"], out  # `manager agents`: joined, available
    assert out.count("clusterprofile.multicluster.x-k8s.io/member1 condition met") == 2
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NAME "))
    row = dict(zip(lines[header].split(), lines[header + 1].split(), strict=False))
    assert row["NAME"] == "member1" and row["HEALTHY"] == "True", out  # the agent's report
    unjoined = [line for line in out.splitlines() if line.startswith("removed agent-state")]
    assert unjoined == [
        "removed agent-state/agent.key",
        "removed agent-state/agent.crt",
        "removed agent-state/kubeconfig",
        "removed agent-state/",
    ]
    assert "member member1 rejected" in out
    assert re.search(r"^stopped \d+ processes$", out, re.M)
    assert not (work / "agent-state").exists()
    assert "joined the hub as member1" in logs["agent.log"]
    assert "approved CSR" in logs["manager.log"] and "agent member member1" in logs["manager.log"]
    for text in (out, err, *logs.values()):
        assert "Traceback" not in text and "PRIVATE KEY" not in text
    assert wait_dead(_started_under(home), timeout=30) == []
