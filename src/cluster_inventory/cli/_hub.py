"""What every command that reads the hub shares: the hub found by kubectl's rules, its namespace.

Kept free of typer, rich and the kube client at import (``get``'s start-up depends on it): a
helper imports what it needs when it is called.
"""

from __future__ import annotations

import os
from pathlib import Path

from cluster_inventory.cli._errors import fail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "HUB_KUBECONFIG_HELP",
    "context_namespace",
    "hub_client",
    "hub_kubeconfig_pin",
    "profile_reference",
]


#: ``--kubeconfig`` help of the commands that read the hub (the loading rules of kubectl).
HUB_KUBECONFIG_HELP = "Hub kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)."


def hub_kubeconfig_pin(path: Path | None) -> tuple[list[str], dict[str, str]]:
    """Plugin arguments and environment that make a child process find the same hub.

    A kubeconfig written for a member runs our plugin under kubectl, whose ``$KUBECONFIG``
    may by then name that very file; so the hub this command found is pinned: ``--kubeconfig``
    for an explicit or home file, ``KUBECONFIG`` (absolute paths) for an environment list,
    nothing in a pod (the plugin finds the service account itself).

    Args:
        path: ``--kubeconfig`` as given.

    Returns:
        (arguments, environment) for the plugin.
    """
    from cluster_inventory import kubeconfig

    paths = kubeconfig.search_paths(path)
    if path is not None:
        return ["--kubeconfig", str(path.absolute())], {}
    if paths is not None and any(os.path.exists(p) for p in paths):
        return [], {"KUBECONFIG": os.pathsep.join(os.path.abspath(p) for p in paths)}
    if kubeconfig.in_cluster() is not None:
        return [], {}
    return ["--kubeconfig", str(Path.home() / ".kube" / "config")], {}


async def hub_client(path: Path | None, context: str | None) -> Any:
    """An API client for the hub, found by kubectl's rules (:mod:`cluster_inventory.kubeconfig`).

    Args:
        path: ``--kubeconfig`` (None: ``$KUBECONFIG`` merged, in-cluster, ``~/.kube/config``).
        context: ``--context``.

    Raises:
        KubeError: No configuration, or a bad one (names the file and field).
        CredentialsError: The hub user's exec plugin failed.
    """
    from cluster_inventory import credentials, kube

    return await credentials.hub_client(kube.load_connection(path, context=context))


def context_namespace(path: Path | None, context: str | None) -> str:
    """The namespace of the chosen context (kubectl's rules), else ``default`` (as kubectl)."""
    from cluster_inventory import kubeconfig

    try:
        return kubeconfig.load(path, context=context).namespace or "default"
    except kubeconfig.KubeconfigError:
        return "default"  # connecting reports a broken kubeconfig with its file and field


def profile_reference(reference: str, namespace: str | None) -> tuple[str | None, str]:
    """Read a profile argument given as ``NAME`` or ``NAMESPACE/NAME`` (as our tables print it).

    Args:
        reference: The command's argument, e.g. ``member1`` or ``team-a/member1``.
        namespace: ``-n``'s value, or None.

    Returns:
        (namespace, name): the namespace from ``-n`` or the reference (None when neither says).

    Raises:
        SystemExit: An empty part, more than one ``/``, or a ``-n`` that names another
            namespace than the reference (via :func:`fail`).
    """
    if "/" not in reference:
        return namespace, reference
    ns, _, name = reference.partition("/")
    if not ns or not name or "/" in name:
        fail(f'"{reference}" is no profile: give NAME or NAMESPACE/NAME')
    if namespace is not None and namespace != ns:
        fail(f'"{reference}" is in namespace "{ns}", but -n says "{namespace}"')
    return ns, name
