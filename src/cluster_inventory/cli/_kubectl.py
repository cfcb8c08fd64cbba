"""Run kubectl for the output formats kubectl already prints.

A kubectl plugin always has kubectl at hand, and ``kubectl get clusterprofiles -o
json|yaml|name|jsonpath=...|go-template=...|custom-columns=...`` is by construction what a
user compares our output with. So ``get`` hands those formats to kubectl, with the same
kubeconfig, context, namespace, selector and name, and keeps for itself what kubectl cannot
print: the inventory table (``get``, ``-o wide``) and ``describe``. Without kubectl, json
and yaml are printed with the standard library and PyYAML; the template formats need it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["DELEGATED_FORMATS", "KUBECTL_ENV", "find_kubectl", "get_argv"]

#: Environment variable naming the kubectl binary to run (else ``kubectl`` on PATH).
KUBECTL_ENV = "CLUSTER_INVENTORY_KUBECTL"

#: ``-o`` formats kubectl prints itself (``k8s.io/cli-runtime`` printers).
DELEGATED_FORMATS = (
    "json",
    "yaml",
    "name",
    "jsonpath",
    "jsonpath-as-json",
    "jsonpath-file",
    "go-template",
    "go-template-file",
    "template",
    "templatefile",
    "custom-columns",
    "custom-columns-file",
)

#: The fully qualified resource, so no other group's ``clusterprofiles`` can be meant.
RESOURCE = "clusterprofiles.multicluster.x-k8s.io"


def find_kubectl() -> str | None:
    """The kubectl to run: ``$CLUSTER_INVENTORY_KUBECTL``, else ``kubectl`` on PATH, else None."""
    explicit = os.environ.get(KUBECTL_ENV)
    if explicit:
        return explicit
    return shutil.which("kubectl")


def get_argv(
    kubectl: str,
    *,
    output: str,
    resource: str = RESOURCE,
    name: str | None = None,
    namespace: str | None = None,
    all_namespaces: bool = False,
    selector: str | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> list[str]:
    """The ``kubectl get`` command line equivalent to our ``get`` with these options.

    Options the user did not give are left out, so kubectl resolves them as it always does
    (``$KUBECONFIG``, the context's namespace).

    Args:
        kubectl: Path of the kubectl binary.
        resource: The fully qualified resource (default: ClusterProfiles).
        output: The ``-o`` value, passed through unchanged (``jsonpath={...}`` included).
        name: One profile, or None for a list.
        namespace: ``--namespace``; ignored with ``all_namespaces``.
        all_namespaces: ``--all-namespaces``.
        selector: ``--selector``.
        kubeconfig: ``--kubeconfig``.
        context: ``--context``.

    Returns:
        The argument vector, ``kubectl`` first.
    """
    argv = [kubectl, "get", resource]
    if name:
        argv.append(name)
    if all_namespaces:
        argv.append("--all-namespaces")
    elif namespace:
        argv += ["--namespace", namespace]
    if selector:
        argv += ["--selector", selector]
    argv += ["--output", output]
    if kubeconfig is not None:
        argv += ["--kubeconfig", str(kubeconfig)]
    if context:
        argv += ["--context", context]
    return argv
