"""The fleet side of bench/runtime_engage.py: profiles' status, member credentials, plugins.

What a run writes before a runtime starts: each member's reader ServiceAccount and its token
in a hub Secret, the ClusterProfiles' status naming them, the provider file's ``execConfig``
for the plugin measured, and the bytecode a runtime process imports.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING

from _runtime_child import MEMBER_NS

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC, SECRET_TOKEN_KEY

if TYPE_CHECKING:
    from cluster_inventory.testing import Fleet

BENCH = Path(__file__).parent


def status(member, secret: str, healthy: bool) -> dict:
    return {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True" if healthy else "False",
                "reason": "Bench",
                "message": "bench",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            }
        ],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": member.server,
                    "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                    "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": secret}}],
                },
            }
        ],
    }


async def set_status(hub, ns: str, name: str, body: dict) -> None:
    await kube.request(
        hub,
        "PATCH",
        kube.CLUSTER_PROFILES.path(ns, name) + "/status",
        body={"status": body},
        content_type="application/merge-patch+json",
    )


async def prepare_members(fleet: Fleet, hub, ns: str) -> dict[str, tuple[str, str]]:
    """A ServiceAccount per member that may read ConfigMaps (a Role: the aggregated `view`
    ClusterRole is empty without kube-controller-manager); its token in one hub Secret.

    Returns: member name -> (Secret name, base64 token)."""
    secrets = {}
    for member in fleet.members.values():
        async with await member.client() as admin:
            for body, resource in (
                ({"metadata": {"name": MEMBER_NS}}, kube.NAMESPACES),
                ({"metadata": {"name": "reader", "namespace": MEMBER_NS}}, kube.SERVICE_ACCOUNTS),
                (
                    {"metadata": {"name": "probe", "namespace": MEMBER_NS}, "data": {"k": "v"}},
                    kube.CONFIG_MAPS,
                ),
                (
                    {
                        "metadata": {"name": "reader", "namespace": MEMBER_NS},
                        "rules": [
                            {
                                "apiGroups": [""],
                                "resources": ["configmaps"],
                                "verbs": ["get", "list", "watch"],
                            }
                        ],
                    },
                    kube.ROLES,
                ),
                (
                    {
                        "metadata": {"name": "reader", "namespace": MEMBER_NS},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "Role",
                            "name": "reader",
                        },
                        "subjects": [
                            {"kind": "ServiceAccount", "name": "reader", "namespace": MEMBER_NS}
                        ],
                    },
                    kube.ROLE_BINDINGS,
                ),
            ):
                await kube.apply(admin, resource, body, field_manager="bench", force=True)
            token = await kube.request_service_account_token(admin, MEMBER_NS, "reader")
        secret = f"token-{member.name}"
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "metadata": {"name": secret, "namespace": ns},
                "data": {SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode()},
            },
            field_manager="bench",
            force=True,
        )
        secrets[member.name] = (secret, base64.b64encode(token.token.encode()).decode())
    return secrets


def exec_config(plugin: str, python: str, ns: str, hub_kubeconfig: dict, workdir: Path) -> dict:
    """The provider file's ``execConfig`` for ``plugin`` reading the tokens in ``ns``.

    ``python``: ours, the ``cluster-inventory-secretreader`` beside that interpreter (the
    checkout under test); ``go``: the upstream plugin, which takes the namespace from its
    kubeconfig's context, not from an argument.
    """
    if plugin == "go":
        from cluster_inventory_workshop.upstream_plugins import upstream_plugin

        config = json.loads(json.dumps(hub_kubeconfig))
        config["contexts"][0]["context"]["namespace"] = ns
        path = workdir / f"hub-{ns}.kubeconfig"
        path.write_text(json.dumps(config))
        command, args = str(upstream_plugin("secretreader")), []
    else:
        path = workdir / "hub.kubeconfig"
        path.write_text(json.dumps(hub_kubeconfig))
        command = str(Path(python).parent / "cluster-inventory-secretreader")
        args = ["--namespace", ns]
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": command,
        "args": args,
        "env": [{"name": "KUBECONFIG", "value": str(path)}],
        "provideClusterInfo": True,
    }


#: Run by each runtime's interpreter before its runs: what a runtime process and our plugin
#: import, compiled to bytecode where it is missing (the image is built with
#: ``compileall``, image/Containerfile; a checkout run with PYTHONDONTWRITEBYTECODE=1, as
#: this machine's sessions and CI are, would otherwise compile every module at every start).
_COMPILE = """
import importlib.util, py_compile, sys
import uvloop, prometheus_client, cluster_inventory.runtime, cluster_inventory.kube.endpoints
import cluster_inventory.api.v1alpha1, cluster_inventory.credentials.plugins.secretreader
import dateutil.parser, urllib3
sys.path.insert(0, sys.argv[1])
import _runtime_child
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None) or ""
    if source.endswith(".py"):
        py_compile.compile(source, importlib.util.cache_from_source(source), doraise=False)
"""


def compile_bytecode(python: str) -> None:
    """Compile what a runtime process started by ``python`` imports (see ``_COMPILE``)."""
    import subprocess

    subprocess.run([python, "-c", _COMPILE, str(BENCH)], check=True)
