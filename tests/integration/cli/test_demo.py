"""`cluster-inventory demo` (what `make demo` runs) end to end on real control planes.

The demo starts its own hub and three members, so these tests check what a new user sees:
the profile table (member3 joined in pull mode, by its agent: docs/agent.md), the consumer's
view through the exec plugin, member3 in a network namespace of its own reached by team-b's
consumer through the hub's cluster proxy, a placement and an apply to it, the outage and recovery (of
the agent member: its agent reports it), and that nothing it started is left running. It runs once, as a
user who installed the wheel would run it: from the session's wheel in a fresh venv outside
the checkout, with the control-plane binaries in the cache and no Go on ``PATH``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from pathlib import Path

from cluster_inventory.cli.demo import (
    CONSUMER,
    INVENTORIES,
    PROPERTY_ACCOUNT_ID,
    PROPERTY_REGION,
    demo_members,
)
from cluster_inventory.testing.versions import KUBERNETES_VERSION
from tests.support.processes.cli import cli
from tests.support.processes.pids import (
    RUN_MARK,
    control_plane_pids,
    pids_with_args,
    started_by,
    wait_dead,
)
from tests.support.processes.wheel import outside

_MANAGER_ARGS = ("cluster_inventory.cli", "manager", "run")
_AGENT_ARGS = ("cluster_inventory.cli", "agent", "run")


def _section(stdout: str, title: str) -> list[dict[str, str]]:
    """The table printed under the line starting with ``title``, as one dict per row."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    headers = re.split(r" {2,}", lines[start + 1])
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = re.split(r" {2,}", line)
        if len(cells) != len(headers):  # a line after the table (e.g. "... forbidden")
            break
        rows.append(dict(zip(headers, cells, strict=True)))
    return rows


def test_demo_from_the_wheel_without_go_shows_profiles_a_consumer_and_an_outage(
    wheel_venv: Path, tmp_path: Path
) -> None:
    env = outside(wheel_venv)
    assert shutil.which("go", path=env["PATH"]) is None, "the demo must not need Go"
    # The outage's graceful stop never ends by itself (the manager's watches hold the drain
    # open) but at the harness's SIGKILL: envtest's variable brings that from 20 s to 3 s.
    env["KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT"] = "3s"
    # Other runs on the machine start and stop control planes meanwhile: only this demo's count.
    env[RUN_MARK] = mark = uuid.uuid4().hex
    before = control_plane_pids() | pids_with_args(*_MANAGER_ARGS) | pids_with_args(*_AGENT_ARGS)
    result = subprocess.run(
        [str(wheel_venv / "bin" / "cluster-inventory"), "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    leftovers = started_by(
        (control_plane_pids() | pids_with_args(*_MANAGER_ARGS) | pids_with_args(*_AGENT_ARGS))
        - before,
        mark,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = result.stdout

    members = {m.name: m for m in demo_members(3)}
    profiles = _section(out, "CLUSTER PROFILES")
    assert {(p["NAMESPACE"], p["NAME"]) for p in profiles} == {
        ("team-a", "member1"),
        ("team-a", "member2"),
        ("team-b", "member2"),
        ("team-b", "member3"),
    }
    for row in profiles:
        member = members[row["NAME"]]
        assert row["VERSION"] == KUBERNETES_VERSION
        assert row["HEALTHY"] == "True"
        assert row["PROPERTIES"] == (
            f"{PROPERTY_ACCOUNT_ID}={member.account_id},{PROPERTY_REGION}={member.region}"
        )
        assert row["ACCESS PROVIDERS"] == "secretreader"
        # member3 joined by its agent (pull mode); the others by their kubeconfig.
        assert row["JOINED"] == (
            "AgentReporting" if row["NAME"] == "member3" else "CredentialAccepted"
        ), row

    team_a = INVENTORIES[0].namespace
    consumer = _section(out, f"CONSUMER {team_a}/{CONSUMER}")
    assert [row["PROFILE"] for row in consumer] == [f"{team_a}/member1", f"{team_a}/member2"]
    for row in consumer:
        namespaces = row["NAMESPACES ON THE MEMBER"].split(",")
        assert {"default", "kube-system", "cluster-inventory-system"} <= set(namespaces)
        assert row["SYNCED CONFIGMAP"] == "color=blue,owner=platform-team"
    assert f"{team_a}/{CONSUMER} listing profiles in team-b: forbidden" in out

    # the placement of team-a's clusters in member1's region, and an apply to it
    region = members["member1"].region
    placed = _section(out, f"PLACEMENT {team_a}/{team_a}-{region} ({PROPERTY_REGION}={region};")
    assert placed == [{"CLUSTER": f"{team_a}/member1", "DECISION SLICE": f"{team_a}-{region}-0"}]
    assert "left out: PropertiesDoNotMatch: member2" in out
    applied = _section(out, f"APPLY --placement {team_a}-{region} as {team_a}/{CONSUMER}")
    assert [(r["CLUSTER"], r["OBJECT"], r["RESULT"]) for r in applied] == [
        (f"{team_a}/member1", "configmap/web-settings", "created"),
        (f"{team_a}/member1", "serviceaccount/web", "created"),
    ]

    # Argo CD Secrets and MultiKueueClusters follow team-a's profiles, and member1's removal
    served = _section(out, f"ARGO CD AND MULTIKUEUE ({team_a}'s profiles;")
    assert [
        (r["PROFILE"], r["ARGO CD SECRET"], r["EXEC PLUGIN"], r["MULTIKUEUECLUSTER"])
        for r in served
    ] == [
        (
            f"{team_a}/{m}",
            f"cluster-{team_a}-{m}",
            "cluster-inventory-secretreader",
            f"{m} -> profile {m}",
        )
        for m in ("member1", "member2")
    ]
    assert all(r["SERVER"].startswith("https://127.0.0.1:") for r in served)
    after = _section(out, f"after {team_a}/member1 went:")
    assert [r["PROFILE"] for r in after] == [f"{team_a}/member2"]

    # member3 ran in its own network namespace; team-b's consumer reached it through the
    # hub's cluster proxy with nothing but its profile (docs/cluster-proxy.md).
    team_b = INVENTORIES[1].namespace
    [proxied] = _section(out, f"THROUGH THE CLUSTER PROXY as {team_b}/{CONSUMER}")
    assert proxied["PROFILE"] == f"{team_b}/member3"
    assert proxied["SERVER"] == "https://127.0.0.1"  # the name member3's certificate holds
    assert proxied["PROXY-URL"].startswith("http://member3@127.0.0.1:"), proxied
    namespaces = proxied["NAMESPACES ON THE MEMBER"].split(",")
    assert {"default", "kube-system", "cluster-inventory-system"} <= set(namespaces)
    assert "It ran in its own network namespace, with no route from the hub" in out
    assert "starting member3 in its own network namespace" in result.stderr

    down = re.search(
        r"^member3 stopped: ControlPlaneHealthy=False \((\w+)\) on (.+) [\d.]+ s after", out, re.M
    )
    up = re.search(
        r"^member3 started: ControlPlaneHealthy=True \((\w+)\) on (.+) [\d.]+ s after", out, re.M
    )
    assert down is not None and up is not None, out
    assert down.group(2) == up.group(2) == "team-b/member3"
    # A draining API server fails readyz ("[-]shutdown", or a 503 Status), may answer 503
    # to /version just after a passing readyz, then stops answering: each is the outage.
    assert down.group(1) in {
        "ReadyzCheckFailed",
        "ReadyzFailed",
        "APIServerUnavailable",
        "APIServerUnreachable",
    }
    assert up.group(1) == "APIServerReady"
    assert down.start() < up.start()
    assert "summary: 3 members, 2 inventories, 4 ClusterProfiles ready" in out
    assert "member3 joined by its agent (pull mode" in out
    assert "joining member3 by its agent" in result.stderr

    # A token is a JWT ("eyJ..."); none may reach the terminal.
    assert "eyJ" not in out + result.stderr
    assert wait_dead(sorted(leftovers), timeout=20) == [], "the demo left processes running"


def test_a_demo_step_that_fails_says_which_and_stops_what_it_started(tmp_path: Path) -> None:
    broken = tmp_path / "kube-apiserver"
    broken.write_text("#!/bin/sh\necho 'flag provided but not defined: --demo' >&2\nexit 3\n")
    broken.chmod(0o755)
    mark = uuid.uuid4().hex
    before = control_plane_pids()
    result = cli(
        "demo",
        "--members",
        "1",
        env={"TEST_ASSET_KUBE_APISERVER": str(broken), RUN_MARK: mark},
        timeout=600,
    )
    leftovers = started_by(control_plane_pids() - before, mark)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()
    error = next(line for line in last if line.startswith("error: "))
    assert error.startswith("error: demo failed while starting a hub and 1 member cluster: ")
    assert "kube-apiserver" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert wait_dead(sorted(leftovers), timeout=20) == []
