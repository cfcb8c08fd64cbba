"""What a member reported never reaches the terminal as a control sequence (`get`, `describe`).

A profile's status is copied from what a member (or its agent) says: a property value, a
condition message. Written here with an ANSI escape (clear the screen, move the cursor), a
bell, a carriage return and a newline that forges a line, a real hub serves it, and the CLI
prints it as kubectl does: ``ESC`` as ``^[``, a table cell cut at its first line break and
followed by ``...`` (``get``, ``get -o wide``), a line break inside a ``describe`` value as
``\\n`` (kubectl escapes ESC and CR only; we escape every C0 and C1 control, DEL and the
bidirectional overrides, ``docs/cli.md``).
"""

from __future__ import annotations

import re

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane
from tests.support.processes.cli import cli

NAME = "edge-escapes"
CLEAR = "\x1b[2J\x1b[H"
FORGED = "ok\r\nedge-2   cluster-inventory   v1.36.3   True"
STAMP = {"lastTransitionTime": "2026-11-01T08:00:00Z"}
#: Any C0 or C1 control, DEL or bidirectional override, in a line of the output.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


async def _profile(hub: ControlPlane, namespace: str) -> None:
    meta = {
        "name": NAME,
        "namespace": namespace,
        "labels": {"x-k8s.io/cluster-manager": "m"},
    }
    async with await hub.client() as client:
        body = {"metadata": meta, "spec": {"clusterManager": {"name": "m"}}}
        await kube.apply(client, kube.CLUSTER_PROFILES, body, field_manager="test")
        conditions = [
            ("ControlPlaneHealthy", "APIServerReady", f"{CLEAR}fine\x07"),
            ("Joined", "AgentReporting", FORGED),
        ]
        status = {
            "conditions": [
                {"type": kind, "status": "True", "reason": why, "message": text, **STAMP}
                for kind, why, text in conditions
            ],
            "version": {"kubernetes": "v1.36.3"},
            "properties": [
                {
                    "name": "evil.example.test",
                    "value": f"{CLEAR}\x1b]0;owned\x07\u202egnp.exe\x9b31m",
                    "lastObservedTime": "2026-11-01T08:00:00Z",
                },
                {
                    "name": "forged.example.test",
                    "value": FORGED,
                    "lastObservedTime": "2026-11-01T08:00:00Z",
                },
            ],
        }
        body = {"metadata": meta, "spec": {"clusterManager": {"name": "m"}}, "status": status}
        await kube.apply(
            client, kube.CLUSTER_PROFILES, body, field_manager="test", subresource="status"
        )


def _ok(*args: str, hub: ControlPlane) -> str:
    result = cli(*args, "--kubeconfig", str(hub.kubeconfig_path))
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_get_wide_escapes_control_characters_and_cuts_a_cell_at_a_line_break(
    hub: ControlPlane, test_namespace: str
) -> None:
    await _profile(hub, test_namespace)
    text = _ok("get", "-n", test_namespace, "-o", "wide", hub=hub)
    assert not [line for line in text.split("\n") if _CONTROL.search(line)], repr(text)
    [header, row] = text.splitlines()  # the forged line is no line of its own
    assert header.split()[0] == "NAME" and row.startswith(NAME)
    properties = row.split()[-1]
    assert "evil.example.test=^[[2J^[[H^[]0;owned^G\\u202egnp.exe\\u009b31m" in properties
    # kubectl's table printer: the cell up to its first line break, then "...".
    assert properties.endswith(",forged.example.test=ok..."), properties


async def test_describe_escapes_control_characters_and_keeps_each_value_on_its_line(
    hub: ControlPlane, test_namespace: str
) -> None:
    await _profile(hub, test_namespace)
    text = _ok("describe", NAME, "-n", test_namespace, hub=hub)
    assert not [line for line in text.split("\n") if _CONTROL.search(line)], repr(text)
    assert "^[[2J^[[Hfine^G" in text
    assert "ok\\r\\nedge-2   cluster-inventory   v1.36.3   True" in text
    assert not [line for line in text.splitlines() if line.startswith("edge-2")]
