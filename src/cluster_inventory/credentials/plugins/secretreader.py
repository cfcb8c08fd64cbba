"""``cluster-inventory-secretreader``: the upstream secretreader contract, with expiry.

Reads the hub Secret ``<namespace>/<clusterName>`` (``clusterName`` from the profile's
``client.authentication.k8s.io/exec`` extension, delivered as ``spec.cluster.config``) and
prints an ExecCredential with ``status.token`` from the key ``token``, as upstream's plugin
(``sigs.k8s.io/cluster-inventory-api/plugins/secretreader``) does, plus
``status.expirationTimestamp`` when the Secret records one under ``expirationTimestamp``, so
that consumers refresh before the token lapses instead of after a 401. Namespace:
``--namespace``, else ``$CLUSTER_INVENTORY_NAMESPACE``, else the hub kubeconfig context's
namespace, else ``$POD_NAMESPACE``, else the pod's service account namespace, else
``default``. Hub: found by kubectl's rules (``--kubeconfig``, every ``$KUBECONFIG`` path
merged, the in-cluster service account, ``~/.kube/config``), through its ``proxy-url`` if it
has one.

Only the standard library is imported (a cold start is paid on every fetch): arguments by
argparse, the hub by :mod:`._hub` (one GET on :mod:`ssl` sockets: http.client would add a
third to the cold start), a kubeconfig by :mod:`cluster_inventory.kubeconfig` (JSON, then
kubectl's YAML subset, PyYAML only for anything else). Errors go to stderr as
``[cluster-inventory-secretreader] <message>`` with exit code 1 (argparse's own included)
and never contain a token.
"""

from __future__ import annotations

import argparse
import binascii
import json
import os
import sys

from cluster_inventory.credentials.plugins.hub import (
    Hub,
    HubError,
    b64decode,
    quote,
    read_file,
)

TYPE_CHECKING = False  # typing costs a measurable share of a cold start
if TYPE_CHECKING:
    from typing import Any, NoReturn

NAME = "cluster-inventory-secretreader"
#: Secret key holding the bearer token (upstream ``SecretTokenKey``).
TOKEN_KEY = "token"  # noqa: S105 - a key name, not a secret
#: Secret key holding the token's expiry (RFC 3339), written by our cluster manager.
EXPIRATION_KEY = "expirationTimestamp"
_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_USAGE = "%(prog)s [--namespace NS] [--kubeconfig FILE] [--context NAME]"
_DESCRIPTION = f"""\
An exec credential plugin (client.authentication.k8s.io/v1 or v1beta1). It reads
KUBERNETES_EXEC_INFO, whose spec.cluster.config must hold {{"clusterName": ...}},
and prints an ExecCredential with the token from the hub Secret
<namespace>/<clusterName>, key "{TOKEN_KEY}"."""


class PluginError(Exception):
    """A failure reported on stderr with exit code 1."""


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"[{NAME}] {message}\n")
    raise SystemExit(1)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors reported as every other failure of the plugin (exit 1)."""

    def error(self, message: str) -> NoReturn:
        raise PluginError(f"{message} (see --help)")


class _Formatter(argparse.RawTextHelpFormatter):
    """argparse's help layout with the texts as written here, at a fixed width.

    Two imports a plugin run does not need: without a width argparse imports shutil (zlib,
    bz2, lzma) for the terminal's, on every ``add_argument``; a formatter that wraps text
    imports textwrap for ``--help``. The texts below are wrapped for 80 columns.
    """

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=78)  # 80 columns less argparse's margin


def _parse_args(argv: list[str]) -> dict[str, str]:
    parser = _Parser(
        prog=NAME,
        usage=_USAGE,
        description=_DESCRIPTION,
        formatter_class=_Formatter,
        allow_abbrev=False,  # an option is spelled out, as kubectl's flags are
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="namespace of the token Secret (default:\n"
        "$CLUSTER_INVENTORY_NAMESPACE, the hub context's\n"
        "namespace, $POD_NAMESPACE, the pod's namespace,\n"
        "default)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the hub's kubeconfig (default: $KUBECONFIG, in-cluster,\n~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="the hub kubeconfig's context")
    known, unknown = parser.parse_known_args(argv)
    if unknown:
        raise PluginError(f"unknown argument {unknown[0]!r} (see --help)")
    return {key: value for key, value in vars(known).items() if value is not None}


def _get_secret(hub: Hub, namespace: str, name: str) -> dict[str, Any]:
    target = f"secret {namespace}/{name}"
    path = f"/api/v1/namespaces/{quote(namespace)}/secrets/{quote(name)}"
    try:
        status, body = hub.get_json(path, user_agent=NAME)
    except HubError as exc:
        raise PluginError(f"failed to get {target}: {exc}") from None
    if status != 200:
        try:
            message = json.loads(body).get("message") or f"HTTP {status}"
        except ValueError:
            message = f"HTTP {status}"
        raise PluginError(f"failed to get {target}: {status} {message}")
    secret: dict[str, Any] = json.loads(body)
    return secret


def _namespace(opts: dict[str, str], hub: Hub) -> str:
    for candidate in (
        opts.get("namespace"),
        os.environ.get("CLUSTER_INVENTORY_NAMESPACE"),
        hub.namespace_hint,
        os.environ.get("POD_NAMESPACE"),
    ):
        if candidate:
            return candidate
    try:
        return read_file(f"{_SA_DIR}/namespace").decode().strip() or "default"
    except OSError:
        return "default"


def run(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> str:
    """Produce the ExecCredential JSON line for one invocation.

    Raises:
        PluginError: Bad input, an unreachable hub, or a missing Secret or key.
    """
    opts = _parse_args(argv)
    raw = environ.get("KUBERNETES_EXEC_INFO", "")
    if not raw:
        raise PluginError("KUBERNETES_EXEC_INFO env var is unset or empty")
    try:
        info = json.loads(raw)
    except ValueError:
        raise PluginError("KUBERNETES_EXEC_INFO is not JSON") from None
    api_version = info.get("apiVersion") if isinstance(info, dict) else None
    if api_version not in _API_VERSIONS or info.get("kind") != "ExecCredential":
        raise PluginError(
            f"KUBERNETES_EXEC_INFO: expected an ExecCredential of {' or '.join(_API_VERSIONS)}"
        )
    spec = info.get("spec")
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    if not isinstance(cluster, dict) or not str(cluster.get("server") or "").strip():
        raise PluginError(
            "spec.cluster.server is missing in KUBERNETES_EXEC_INFO (set provideClusterInfo: true)"
        )
    config = cluster.get("config")
    if not isinstance(config, dict):
        raise PluginError("missing ExecCredential.Spec.Cluster.Config")
    cluster_name = config.get("clusterName")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise PluginError("missing clusterName in ExecCredential.Spec.Cluster.Config")
    try:
        hub = Hub(opts)
    except HubError as exc:
        raise PluginError(str(exc)) from None
    namespace = _namespace(opts, hub)
    data = _get_secret(hub, namespace, cluster_name).get("data") or {}
    try:
        token = b64decode(data.get(TOKEN_KEY) or "").decode().strip()
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise PluginError(
            f"secret {namespace}/{cluster_name}: key {TOKEN_KEY!r} is not text"
        ) from None
    if not token:
        raise PluginError(f'secret {namespace}/{cluster_name} missing "{TOKEN_KEY}" key')
    status: dict[str, str] = {"token": token}
    expiry = data.get(EXPIRATION_KEY)
    if expiry:
        try:
            status["expirationTimestamp"] = b64decode(expiry).decode().strip()
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise PluginError(
                f"secret {namespace}/{cluster_name}: key {EXPIRATION_KEY!r} is not text"
            ) from None
    credential = {
        "kind": "ExecCredential",
        "apiVersion": api_version,
        "spec": {"interactive": False},
        "status": status,
    }
    return json.dumps(credential, separators=(",", ":"))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: print the ExecCredential or fail with exit code 1."""
    try:
        line = run(sys.argv[1:] if argv is None else argv, os.environ)
    except PluginError as exc:
        _fail(str(exc))
    sys.stdout.write(line + "\n")


if __name__ == "__main__":
    main()
