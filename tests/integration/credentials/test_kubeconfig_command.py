"""`cluster-inventory kubeconfig` gives plain kubectl a way in through the exec plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from cluster_inventory.testing import find_binary
from tests.support.hub.published import PROFILE, Published

CLI = Path(sys.executable).parent / "cluster-inventory"


def test_kubectl_reaches_the_member_with_the_written_kubeconfig(
    published: Published, tmp_path: Path
) -> None:
    out = tmp_path / "member.kubeconfig"
    subprocess.run(
        [
            str(CLI),
            "kubeconfig",
            PROFILE,
            "-n",
            published.namespace,
            "--kubeconfig",
            str(published.hub.kubeconfig_path),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    config = yaml.safe_load(out.read_text())
    assert out.stat().st_mode & 0o777 == 0o600
    assert config["users"][0]["user"]["exec"]["provideClusterInfo"] is True
    assert "token" not in str(config["users"])
    kubectl = find_binary("kubectl")
    proc = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(out),
            "get",
            "configmaps",
            "-n",
            published.namespace,
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "configmap/hello" in proc.stdout


def test_unknown_profile_is_one_line_error(published: Published) -> None:
    proc = subprocess.run(
        [
            str(CLI),
            "kubeconfig",
            "nope",
            "-n",
            published.namespace,
            "--kubeconfig",
            str(published.hub.kubeconfig_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")
    assert "nope" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_profile_given_as_namespace_slash_name_is_found(published: Published) -> None:
    """The form our tables print (``team-a/member1``) works as ``get`` and ``describe`` take it."""
    hub = ("--kubeconfig", str(published.hub.kubeconfig_path))
    reference = f"{published.namespace}/{PROFILE}"
    with_slash = subprocess.run(
        [str(CLI), "kubeconfig", reference, *hub], capture_output=True, text=True, check=False
    )
    assert with_slash.returncode == 0, with_slash.stderr
    with_n = subprocess.run(
        [str(CLI), "kubeconfig", PROFILE, "-n", published.namespace, *hub],
        capture_output=True,
        text=True,
        check=True,
    )
    assert with_slash.stdout == with_n.stdout
    described = subprocess.run(
        [str(CLI), "describe", reference, *hub], capture_output=True, text=True, check=False
    )
    assert described.returncode == 0, described.stderr
    assert f"Namespace:        {published.namespace}" in described.stdout


def test_a_namespace_slash_name_that_contradicts_n_is_one_line_error(
    published: Published,
) -> None:
    proc = subprocess.run(
        [
            str(CLI),
            "kubeconfig",
            f"{published.namespace}/{PROFILE}",
            "-n",
            "elsewhere",
            "--kubeconfig",
            str(published.hub.kubeconfig_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        f'error: "{published.namespace}/{PROFILE}" is in namespace "{published.namespace}", '
        'but -n says "elsewhere"\n'
    )
