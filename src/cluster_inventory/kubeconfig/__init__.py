"""The one kubeconfig loader and one-cluster writer, with kubectl's rules, on the stdlib only.

Every command, the runtime, the cluster manager and the exec plugin find their hub here, so
that they agree with each other and with kubectl, client-go and controller-runtime
(``config.GetConfig``) on where a configuration comes from:

1. an explicit path (``--kubeconfig``): that file alone, which must exist;
2. else every path of ``$KUBECONFIG`` (``os.pathsep``-separated, empty entries and
   duplicates dropped, missing files skipped), merged as clientcmd merges them: a cluster,
   user or context name and ``current-context`` are taken from the first file that sets
   them, and relative file references are resolved against the file that holds them;
3. else the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``PORT`` and
   ``/var/run/secrets/kubernetes.io/serviceaccount``);
4. else ``~/.kube/config``.

The chosen context (``--context``, else ``current-context``) gives a :class:`Kubeconfig`:
server, TLS material (``*-data`` or files), ``tls-server-name``,
``insecure-skip-tls-verify``, ``proxy-url`` (http, https or socks5), token or token file,
client certificate, or an exec user (``users[].user.exec``, run by
:mod:`cluster_inventory.credentials`). ``auth-provider`` users are refused: client-go
removed the in-tree providers in 1.26.

The other way round, :func:`one_cluster_document` writes every kubeconfig this project hands
out: one cluster, one user, one context.

This package imports nothing but the standard library (the exec plugin pays a cold start on
every credential fetch): JSON, then kubectl's YAML subset by a small parser, PyYAML only for
anything else.
"""

from __future__ import annotations

import os

from cluster_inventory.kubeconfig._document import from_document
from cluster_inventory.kubeconfig._files import _read, load_merged, search_paths
from cluster_inventory.kubeconfig._model import Kubeconfig, KubeconfigError
from cluster_inventory.kubeconfig._writer import one_cluster_document

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "IN_CLUSTER_DIR",
    "Kubeconfig",
    "KubeconfigError",
    "from_document",
    "in_cluster",
    "load",
    "load_merged",
    "one_cluster_document",
    "search_paths",
]

#: Where a pod's service account token, CA and namespace are mounted.
IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def in_cluster(environ: Mapping[str, str] | None = None) -> Kubeconfig | None:
    """The pod's own configuration, or None outside a pod.

    As client-go's ``rest.InClusterConfig``: ``https://$KUBERNETES_SERVICE_HOST:PORT``, the
    mounted token and CA, and the mounted namespace.

    Raises:
        KubeconfigError: The variables are set but the token or CA cannot be read.
    """
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST")
    port = env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    try:
        token = _read(f"{IN_CLUSTER_DIR}/token").decode().strip()
        ca = _read(f"{IN_CLUSTER_DIR}/ca.crt")
    except OSError as exc:
        raise KubeconfigError(f"in-cluster config: cannot read {exc.filename}") from None
    try:
        namespace: str | None = _read(f"{IN_CLUSTER_DIR}/namespace").decode().strip() or None
    except OSError:
        namespace = None
    if ":" in host:
        host = f"[{host}]"
    return Kubeconfig(
        source="in-cluster",
        server=f"https://{host}:{port}",
        ca_data=ca,
        token=token,
        namespace=namespace,
    )


def load(
    path: str | os.PathLike[str] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
) -> Kubeconfig:
    """Find and load the configuration kubectl would use (the rules of this module's doc).

    Args:
        path: ``--kubeconfig``; when given, only that file is read and it must exist.
        context: ``--context``; defaults to the merged ``current-context``.
        environ: The environment (default ``os.environ``): ``KUBECONFIG``,
            ``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``.
        home: The home directory (default ``~``) for ``~/.kube/config``.

    Returns:
        The chosen context's settings.

    Raises:
        KubeconfigError: No configuration is found, or the one found is invalid (the message
            names the file and field).
    """
    paths = search_paths(path, environ)
    if paths is not None:
        doc, read = load_merged(paths, required=path is not None)
        if read:
            return from_document(doc, context=context, source=read)
        env_paths = os.pathsep.join(paths)
    pod = in_cluster(environ)
    if pod is not None:
        return pod
    default = os.path.join(home or os.path.expanduser("~"), ".kube", "config")
    doc, read = load_merged([default])
    if read:
        return from_document(doc, context=context, source=read)
    searched = f"$KUBECONFIG ({env_paths}: no such file), " if paths is not None else ""
    raise KubeconfigError(
        f"no configuration found: tried {searched}the in-cluster service account "
        f"(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set) and {default}; "
        "pass --kubeconfig or set KUBECONFIG"
    )
