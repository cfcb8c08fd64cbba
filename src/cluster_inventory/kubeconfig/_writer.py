"""The one writer of a kubeconfig for one cluster: :func:`one_cluster_document`.

Every kubeconfig this project hands out names one cluster, one user and one context: the
exec kubeconfig of a ClusterProfile, an agent's bootstrap and member credentials, a test
control plane's. They are built here so that they agree on the layout kubectl writes
(``kubectl config set-cluster/set-credentials/set-context/use-context``) and a reader of
:func:`~cluster_inventory.kubeconfig.from_document` finds what it expects.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from cluster_inventory.shapes import RawCluster, RawContext, RawKubeconfig, RawUser

__all__ = ["one_cluster_document"]


def one_cluster_document(
    *,
    name: str,
    cluster: RawCluster,
    user: RawUser,
    user_name: str | None = None,
    namespace: str | None = None,
) -> RawKubeconfig:
    """A ``kind: Config`` document with one cluster, one user and the context joining them.

    The cluster and the context are both called ``name``, and the context is the
    ``current-context``: what ``kubectl config view --minify`` shows for one context
    (clientcmd's ``api/v1.Config``).

    Args:
        name: The cluster's and the context's name.
        cluster: The ``clusters[].cluster`` entry (server, CA, ...), used as given.
        user: The ``users[].user`` entry (token, client certificate or exec), used as given.
        user_name: The user's name (default ``name``).
        namespace: The context's namespace, if any.

    Returns:
        The document, keys in kubectl's order (``apiVersion``, ``kind``, ``clusters``,
        ``users``, ``contexts``, ``current-context``).
    """
    user_name = user_name or name
    context: RawContext = {"cluster": name, "user": user_name}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
    }
