import json
import subprocess
import sys

import pytest

from cluster_inventory.api.constants import SECRET_EXPIRATION_KEY, SECRET_TOKEN_KEY
from cluster_inventory.credentials.plugins import secretreader


def info(cluster=None, api_version="client.authentication.k8s.io/v1"):
    spec = {"interactive": False}
    if cluster is not None:
        spec["cluster"] = cluster
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec})


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({}, "KUBERNETES_EXEC_INFO env var is unset or empty"),
        ({"KUBERNETES_EXEC_INFO": "{"}, "not JSON"),
        ({"KUBERNETES_EXEC_INFO": info(api_version="v9")}, "expected an ExecCredential"),
        ({"KUBERNETES_EXEC_INFO": info()}, "spec.cluster.server is missing"),
        (
            {
                "KUBERNETES_EXEC_INFO": json.dumps(
                    {**json.loads(info()), "spec": ["not", "a", "map"]}
                )
            },
            "spec.cluster.server is missing",
        ),
        (
            {"KUBERNETES_EXEC_INFO": info({"server": "https://x"})},
            "missing ExecCredential.Spec.Cluster.Config",
        ),
        (
            {"KUBERNETES_EXEC_INFO": info({"server": "https://x", "config": {}})},
            "missing clusterName",
        ),
    ],
)
def test_bad_exec_info_is_refused(environ, words):
    with pytest.raises(secretreader.PluginError, match=words):
        secretreader.run([], environ)


def test_unknown_argument_is_refused():
    with pytest.raises(secretreader.PluginError, match="unknown argument"):
        secretreader.run(["--frobnicate"], {})


def test_secret_keys_match_the_api_constants():
    assert secretreader.TOKEN_KEY == SECRET_TOKEN_KEY
    assert secretreader.EXPIRATION_KEY == SECRET_EXPIRATION_KEY


def test_plugin_imports_nothing_heavy():
    code = (
        "import sys, cluster_inventory.credentials.plugins.secretreader\n"
        "heavy = {'pydantic', 'kubernetes_asyncio', 'aiohttp', 'yaml', 'typing', 'http',"
        " 'email', 'importlib.metadata', 'cryptography'}\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_errors_go_to_stderr_with_prefix_and_exit_1():
    proc = subprocess.run(
        [sys.executable, "-m", "cluster_inventory.credentials.plugins.secretreader"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("[cluster-inventory-secretreader] KUBERNETES_EXEC_INFO")
    assert proc.stdout == ""


def test_options_take_kubectl_spellings():
    opts = secretreader._parse_args(["-n", "team-a", "--kubeconfig=/hub.yaml", "--context", "c"])
    assert opts == {"namespace": "team-a", "kubeconfig": "/hub.yaml", "context": "c"}
    assert secretreader._parse_args([]) == {}


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--namespace"], "expected one argument"),
        (["--name", "team-a"], "unknown argument '--name'"),  # no abbreviations
        (["team-a"], "unknown argument 'team-a'"),
    ],
)
def test_bad_arguments_are_plugin_errors(argv, words):
    with pytest.raises(secretreader.PluginError, match=words):
        secretreader.run(argv, {})


def test_bad_arguments_exit_1_with_prefix_not_argparse_2():
    proc = subprocess.run(
        [sys.executable, "-m", "cluster_inventory.credentials.plugins.secretreader", "-n"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "[cluster-inventory-secretreader] argument -n/--namespace: expected one argument "
        "(see --help)\n"
    )


def test_help_goes_to_stdout_with_exit_0():
    proc = subprocess.run(
        [sys.executable, "-m", "cluster_inventory.credentials.plugins.secretreader", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: cluster-inventory-secretreader")
    assert "--kubeconfig FILE" in proc.stdout
    assert proc.stderr == ""
