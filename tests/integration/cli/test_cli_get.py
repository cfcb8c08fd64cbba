"""`get` and `describe` against a real hub: golden output, delegation to kubectl, plugin discovery.

Every `-o` format but the table and `wide` is kubectl's own: `get` runs `kubectl get
clusterprofiles` with the same options, so those tests check that kubectl ran with them
(byte-identical output, and the argument vector a recording wrapper saw), and that without
kubectl json and yaml still work while the template formats say they need it.

The profiles are written by the test with fixed content, so the only things that vary between
runs are what the API server sets (uid, resourceVersion, creationTimestamp and so AGE); those
are normalised before comparing with the files in ``golden/``. Set
``CLUSTER_INVENTORY_UPDATE_GOLDEN=1`` to rewrite the files after an intended change, and read
the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.cli._table import format_table
from cluster_inventory.testing import ControlPlane, find_binary
from tests.support.processes.binaries import hub_kubectl
from tests.support.processes.cli import cli, scripts_dir

GOLDEN = Path(__file__).parent / "golden"
NAMESPACE = "golden-inventory"
OTHER_NAMESPACE = "golden-inventory-2"
_AGE = re.compile(r"^(\d+[smhdy])+$|^<unknown>$")
_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="


def _profile(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"golden": "true", "x-k8s.io/cluster-manager": "golden-manager", **labels},
        },
        "spec": {"displayName": name.title(), "clusterManager": {"name": "golden-manager"}},
    }


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-11-01T08:00:00Z",
    }


STATUSES = {
    "alpha": {
        "conditions": [
            _condition("ControlPlaneHealthy", "True", "APIServerReady", "/readyz is ok"),
            _condition("Joined", "True", "CredentialAccepted", "the registration works"),
        ],
        "version": {"kubernetes": "v1.36.3"},
        "properties": [
            {
                "name": "region.example.com",
                "value": "eu-west-1",
                "lastObservedTime": "2026-11-01T08:00:00Z",
            },
            {
                "name": "account.example.com",
                "value": "111111111111",
                "lastObservedTime": "2026-11-01T08:00:00Z",
            },
        ],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": "https://alpha.example.com:6443",
                    "certificate-authority-data": _CA,
                    "extensions": [
                        {
                            "name": "client.authentication.k8s.io/exec",
                            "extension": {"clusterName": "alpha"},
                        }
                    ],
                },
            }
        ],
    },
    "beta": {
        "conditions": [
            _condition(
                "ControlPlaneHealthy",
                "False",
                "APIServerUnreachable",
                "Get https://beta.example.com:6443/readyz: connection refused",
            ),
        ],
        "version": {"kubernetes": "v1.35.0"},
        "accessProviders": [
            {"name": "secretreader", "cluster": {"server": "https://beta.example.com:6443"}},
            {"name": "token-exchange", "cluster": {"server": "https://beta.example.com:6443"}},
        ],
    },
}


@pytest.fixture(scope="module")
async def golden_hub(hub: ControlPlane) -> AsyncIterator[ControlPlane]:
    """Three profiles in NAMESPACE (alpha healthy, beta not, gamma without status), one more
    in OTHER_NAMESPACE, all labelled golden=true."""
    async with await hub.client() as client:
        for ns in (NAMESPACE, OTHER_NAMESPACE):
            await kube.apply(
                client, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="test"
            )
        member_ids = {"alpha": "5d1c2a9e-0000-4000-8000-000000000001"}
        for name in ("alpha", "beta", "gamma"):
            labels = (
                {"multicluster.x-k8s.io/inventory-member-id": member_ids[name]}
                if name in member_ids
                else {}
            )
            await kube.apply(
                client,
                kube.CLUSTER_PROFILES,
                _profile(name, NAMESPACE, labels),
                field_manager="test",
            )
            if name in STATUSES:
                body = {**_profile(name, NAMESPACE, labels), "status": STATUSES[name]}
                await kube.apply(
                    client, kube.CLUSTER_PROFILES, body, field_manager="test", subresource="status"
                )
        await kube.apply(
            client,
            kube.CLUSTER_PROFILES,
            _profile("delta", OTHER_NAMESPACE, {}),
            field_manager="test",
        )
        await kube.apply(
            client, kube.NAMESPACES, {"metadata": {"name": "golden-empty"}}, field_manager="test"
        )
        yield hub
        for ns in (NAMESPACE, OTHER_NAMESPACE, "golden-empty"):
            await kube.delete(client, kube.NAMESPACES, ns)


def _table(text: str, age_column: str = "AGE") -> str:
    """Check the table's columns line up under its headers, then blank out AGE."""
    lines = text.splitlines()
    header = lines[0]
    found = list(re.finditer(r"\S+(?: \S+)*", header))  # a title may hold one space
    names = [m.group() for m in found]
    starts = [m.start() for m in found]
    rows = []
    for line in lines[1:]:
        for start in starts[1:]:
            assert line[start - 1] == " " and line[start] != " ", f"column misaligned:\n{text}"
        cells = [line[a:b].rstrip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        if age_column in names:
            age = cells[names.index(age_column)]
            assert _AGE.match(age), f"AGE {age!r} is not kubectl's shape"
            cells[names.index(age_column)] = "<age>"
        rows.append(cells)
    return format_table(names, rows)


def _server_fields(text: str) -> str:
    """Blank what the API server sets: uid, resourceVersion, timestamps, generation."""
    text = re.sub(
        r'("?(uid|resourceVersion|creationTimestamp)"?: )"?[^",\n]+"?',
        r"\1<set by the server>",
        text,
    )
    return re.sub(r"^(Created: +)\S+$", r"\1<set by the server>", text, flags=re.M)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("CLUSTER_INVENTORY_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with CLUSTER_INVENTORY_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from the golden file:\n{text}"


@pytest.fixture(autouse=True)
def _kubectl_for_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI runs under kubectl in real use; here kubectl is the test assets' binary."""
    from cluster_inventory.cli._kubectl import KUBECTL_ENV

    monkeypatch.setenv(KUBECTL_ENV, str(find_binary("kubectl")))


def _ok(*args: str, hub: ControlPlane) -> str:
    result = cli(*args, "--kubeconfig", str(hub.kubeconfig_path))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("golden", "args"),
    [
        ("get.txt", ("get", "-n", NAMESPACE)),
        ("get-wide.txt", ("get", "-n", NAMESPACE, "-o", "wide")),
        ("get-all-namespaces.txt", ("get", "-A", "-l", "golden=true")),
        (
            "get-selector.txt",
            ("get", "-n", NAMESPACE, "-l", "multicluster.x-k8s.io/inventory-member-id"),
        ),
        ("get-one.txt", ("get", "beta", "-n", NAMESPACE, "-o", "wide")),
    ],
)
async def test_tables_match_their_golden_files(
    golden_hub: ControlPlane, golden: str, args: tuple[str, ...]
) -> None:
    _golden(golden, _table(_ok(*args, hub=golden_hub)))


@pytest.mark.parametrize("name", ["alpha", "beta", "gamma"])
async def test_describe_matches_its_golden_file(golden_hub: ControlPlane, name: str) -> None:
    text = _ok("describe", name, "-n", NAMESPACE, hub=golden_hub)
    _golden(f"describe-{name}.txt", _server_fields(text))


async def test_yaml_of_one_profile_matches_its_golden_file(golden_hub: ControlPlane) -> None:
    text = _ok("get", "alpha", "-n", NAMESPACE, "-o", "yaml", hub=golden_hub)
    _golden("get-alpha.yaml", _server_fields(text))


@pytest.mark.parametrize(
    "output",
    [
        "json",
        "name",
        "jsonpath={.items[*].metadata.name}",
        'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[?(@.type=="ControlPlaneHealthy")].status}{"\\n"}{end}',
        "jsonpath={.items[0].status.accessProviders[0].cluster.extensions[0].extension}",
        "jsonpath=.items[*].spec.displayName",
        "jsonpath={.items[*].status.nosuch}",
        "jsonpath-as-json={.items[*].metadata.name}",
        "go-template={{range .items}}{{.metadata.name}} {{end}}",
        "custom-columns=NAME:.metadata.name,MANAGER:.spec.clusterManager.name",
    ],
)
async def test_machine_formats_print_what_kubectl_prints(
    golden_hub: ControlPlane, output: str
) -> None:
    ours = _ok("get", "-n", NAMESPACE, "-o", output, hub=golden_hub)
    theirs = hub_kubectl("get", "clusterprofiles", "-n", NAMESPACE, "-o", output, hub=golden_hub)
    assert theirs.returncode == 0, theirs.stderr
    assert ours == theirs.stdout


@pytest.mark.parametrize(
    "args", [("-n", NAMESPACE), ("alpha", "-n", NAMESPACE), ("-n", "golden-empty")]
)
async def test_yaml_holds_what_kubectl_yaml_holds(
    golden_hub: ControlPlane, args: tuple[str, ...]
) -> None:
    ours = yaml.safe_load(_ok("get", *args, "-o", "yaml", hub=golden_hub))
    theirs = hub_kubectl("get", "clusterprofiles", *args, "-o", "yaml", hub=golden_hub)
    assert theirs.returncode == 0, theirs.stderr
    assert ours == yaml.safe_load(theirs.stdout)
    assert "managedFields" not in json.dumps(ours)


async def test_kubectl_runs_with_the_same_options(
    golden_hub: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cluster_inventory.cli._kubectl import KUBECTL_ENV

    record = tmp_path / "argv"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\nexec {find_binary("kubectl")} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv(KUBECTL_ENV, str(wrapper))
    output = "jsonpath={.items[*].metadata.name}"
    args = ("get", "-n", NAMESPACE, "-l", "golden=true", "-o", output)
    result = cli(*args, "--kubeconfig", str(golden_hub.kubeconfig_path), "--context", "hub")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["alpha", "beta", "gamma"]
    assert record.read_text().splitlines() == [
        "get",
        "clusterprofiles.multicluster.x-k8s.io",
        "--namespace",
        NAMESPACE,
        "--selector",
        "golden=true",
        "--output",
        output,
        "--kubeconfig",
        str(golden_hub.kubeconfig_path),
        "--context",
        "hub",
    ]


@pytest.mark.parametrize("args", [("-n", NAMESPACE), ("alpha", "-n", NAMESPACE)])
async def test_without_kubectl_json_and_yaml_still_print_the_same_data(
    golden_hub: ControlPlane, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    from cluster_inventory.cli._kubectl import KUBECTL_ENV

    monkeypatch.delenv(KUBECTL_ENV)
    # not os.defpath's parent: that is "/bin:/usr", and /bin may hold a kubectl
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    theirs = hub_kubectl("get", "clusterprofiles", *args, "-o", "json", hub=golden_hub)
    assert theirs.returncode == 0, theirs.stderr
    for output, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        ours = _ok("get", *args, "-o", output, hub=golden_hub)
        assert load(ours) == json.loads(theirs.stdout)


async def test_without_kubectl_template_formats_say_they_need_it(
    golden_hub: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cluster_inventory.cli._kubectl import KUBECTL_ENV

    monkeypatch.delenv(KUBECTL_ENV)
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    result = cli(
        "get", "-n", NAMESPACE, "-o", "name", "--kubeconfig", str(golden_hub.kubeconfig_path)
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: -o name is printed by kubectl, which was not found on PATH (or set "
        f"{KUBECTL_ENV}); without it, get prints the table, wide, json and yaml\n"
    )


async def test_kubectl_discovers_the_plugin_and_runs_it(golden_hub: ControlPlane) -> None:
    path = f"{scripts_dir()}{os.pathsep}{os.environ.get('PATH', '')}"
    listed = hub_kubectl("plugin", "list", hub=golden_hub, env={"PATH": path})
    assert str(scripts_dir() / "kubectl-inventory") in listed.stdout, listed.stdout + listed.stderr
    through_kubectl = hub_kubectl(
        "inventory", "get", "-n", NAMESPACE, "-o", "wide", hub=golden_hub, env={"PATH": path}
    )
    assert through_kubectl.returncode == 0, through_kubectl.stderr
    _golden("get-wide.txt", _table(through_kubectl.stdout))
    missing = hub_kubectl(
        "inventory", "describe", "nosuch", "-n", NAMESPACE, hub=golden_hub, env={"PATH": path}
    )
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert "nosuch" in missing.stderr and "not found" in missing.stderr.lower()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get", "nosuch", "-n", NAMESPACE), "nosuch"),
        (
            ("get", "-o", "table"),
            'unable to match a printer suitable for the output format "table"',
        ),
        (("get", "alpha", "-A"), "a resource cannot be retrieved by name across all namespaces"),
        (("get", "-n", NAMESPACE, "-o", "jsonpath={.items[*"), "jsonpath"),  # kubectl's words
        (("get", "alpha", "-n", NAMESPACE, "-l", "a=b", "-o", "name"), "selector"),
    ],
)
async def test_errors_are_one_line_on_stderr_with_exit_code_1(
    golden_hub: ControlPlane, args: tuple[str, ...], message: str
) -> None:
    result = cli(*args, "--kubeconfig", str(golden_hub.kubeconfig_path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


async def test_an_empty_inventory_says_so_on_stderr(golden_hub: ControlPlane) -> None:
    result = cli("get", "-n", "golden-empty", "--kubeconfig", str(golden_hub.kubeconfig_path))
    assert result.returncode == 0
    assert (result.stdout, result.stderr) == ("", "No resources found in golden-empty namespace.\n")


async def test_the_namespace_defaults_to_the_kubeconfig_context(
    golden_hub: ControlPlane, tmp_path: Path
) -> None:
    config = yaml.safe_load(golden_hub.kubeconfig_path.read_text())
    config["contexts"][0]["context"]["namespace"] = OTHER_NAMESPACE
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    result = cli("get", "-o", "name", "--kubeconfig", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "clusterprofile.multicluster.x-k8s.io/delta\n"


async def test_describe_shows_only_the_events_about_that_profile(golden_hub: ControlPlane) -> None:
    async with await golden_hub.client() as client:
        delta = await kube.get(client, kube.CLUSTER_PROFILES, "delta", namespace=OTHER_NAMESPACE)
        uid = delta["metadata"]["uid"]
        about = [
            ("this-profile", "ClusterProfile", "delta", uid),
            ("earlier-profile-same-name", "ClusterProfile", "delta", "00000000-dead"),
            ("a-pod-called-delta", "Pod", "delta", "00000000-beef"),
            ("another-profile", "ClusterProfile", "alpha", "00000000-f00d"),
        ]
        for note, kind, name, regarding_uid in about:
            event = {
                "metadata": {"name": f"delta-{note}", "namespace": OTHER_NAMESPACE},
                "eventTime": "2026-11-01T08:00:00.000000Z",
                "reportingController": "cluster-inventory.dev/test",
                "reportingInstance": "test",
                "action": "Probe",
                "reason": "Probed",
                "type": "Normal",
                "note": note,
                "regarding": {
                    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                    "kind": kind,
                    "name": name,
                    "namespace": OTHER_NAMESPACE,
                    "uid": regarding_uid,
                },
            }
            await kube.create(client, kube.EVENTS, event)
    text = _ok("describe", "delta", "-n", OTHER_NAMESPACE, hub=golden_hub)
    events = text[text.index("Events:") :]
    assert "this-profile" in events, text
    for other in ("earlier-profile-same-name", "a-pod-called-delta", "another-profile"):
        assert other not in events, text
