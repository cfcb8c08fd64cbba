"""Every file a command reads gives one ``error:`` line naming it when it cannot be read.

Issue 32: a registration file or a member kubeconfig holding non-UTF-8 bytes ended
``manager run --source file:`` and ``register --kubeconfig`` with a traceback. Each command
here is run as a user runs it (a subprocess) on a binary file, a file in Latin-1 and a
directory, and must print exactly one line on stderr that names the file and the problem.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_inventory.testing import Fleet
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.processes.cli import cli

#: Bytes no UTF-8 decoder accepts (a PNG header, then a Latin-1 "é").
BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + "clusters: [café]".encode("latin-1")


def bad_files(tmp_path: Path) -> dict[str, Path]:
    """A binary file, a Latin-1 text file and a directory, by what they are."""
    binary = tmp_path / "binary.dat"
    binary.write_bytes(BINARY)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("clusters:\n- name: café\n".encode("latin-1"))
    directory = tmp_path / "a-directory"
    directory.mkdir()
    return {"binary": binary, "latin1": latin1, "directory": directory}


def assert_one_error_line(result, path: Path, problem: str) -> None:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert str(path) in lines[0]
    assert problem in lines[0]
    assert result.stdout == ""


PROBLEM = {"binary": "not UTF-8 text", "latin1": "not UTF-8 text", "directory": "cannot read"}


@pytest.mark.parametrize("kind", ["binary", "latin1", "directory"])
def test_register_names_an_unreadable_member_kubeconfig(tmp_path: Path, kind: str) -> None:
    path = bad_files(tmp_path)[kind]
    result = cli("register", "m1", "--kubeconfig", str(path), "--clusterset", "prod")
    assert_one_error_line(result, path, PROBLEM[kind])


@pytest.mark.parametrize("kind", ["binary", "latin1", "directory"])
def test_manager_run_names_an_unreadable_registration_file(
    fleet: Fleet, tmp_path: Path, kind: str
) -> None:
    path = bad_files(tmp_path)[kind]
    result = cli(
        "manager",
        "run",
        "--source",
        f"file:{path}",
        "--kubeconfig",
        str(fleet.hub.kubeconfig_path),
        "--no-leader-elect",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    )
    assert_one_error_line(result, path, PROBLEM[kind])
    assert "registration file" in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["apply", "-f", "manifests.yaml", "--profile", "m1"],
        ["argocd", "sync", "-n", "team-a"],
        ["multikueue", "config"],
    ],
    ids=["apply", "argocd-sync", "multikueue-config"],
)
@pytest.mark.parametrize("kind", ["binary", "latin1", "directory"])
def test_commands_name_an_unreadable_provider_file(
    tmp_path: Path, command: list[str], kind: str
) -> None:
    path = bad_files(tmp_path)[kind]
    (tmp_path / "manifests.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    )
    args = [str(tmp_path / a) if a == "manifests.yaml" else a for a in command]
    result = cli(*args, "--provider-file", str(path))
    assert_one_error_line(result, path, PROBLEM[kind])


@pytest.mark.parametrize("kind", ["binary", "latin1"])
def test_apply_names_an_unreadable_manifest(tmp_path: Path, kind: str) -> None:
    path = bad_files(tmp_path)[kind]
    providers = provider_file(tmp_path / "providers.json", str(PLUGIN), [], {})
    result = cli("apply", "-f", str(path), "--profile", "m1", "--provider-file", str(providers))
    assert_one_error_line(result, path, PROBLEM[kind])


def test_apply_names_binary_standard_input(tmp_path: Path) -> None:
    path = bad_files(tmp_path)["binary"]
    providers = provider_file(tmp_path / "providers.json", str(PLUGIN), [], {})
    result = cli(
        "apply", "-f", "-", "--profile", "m1", "--provider-file", str(providers), stdin=path
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == ["error: -: not UTF-8 text (byte 0x89 at offset 0)"]


@pytest.mark.parametrize("kind", ["binary", "latin1", "directory"])
def test_get_names_an_unreadable_hub_kubeconfig(tmp_path: Path, kind: str) -> None:
    path = bad_files(tmp_path)[kind]
    result = cli("get", "--kubeconfig", str(path))
    assert_one_error_line(result, path, PROBLEM[kind])
