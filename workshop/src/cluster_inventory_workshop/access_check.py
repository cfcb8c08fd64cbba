"""Build ``access-check``: the upstream consumer library ``pkg/access`` run over an inventory.

multicluster-runtime's ClusterProfile provider, Kueue and the Knative Operator reach members
through ``sigs.k8s.io/cluster-inventory-api/pkg/access``: a provider file (flag
``--clusterprofile-provider-file``) and ``Config.BuildConfigFromCP``, which picks the first
provider of the file that a profile advertises and hands client-go an exec config. Rather
than trust our reading of that library, interop tests run ``access-check`` (the Go source in
``testing/accesscheck``), built against :data:`CLUSTER_INVENTORY_API_VERSION`: it lists the
ClusterProfiles of one hub namespace, builds each member's config with ``pkg/access`` and
lists Namespaces on the member (client-go runs the exec plugin), printing one JSON result
per profile with the member's ``kube-system`` UID.

Cached under ``~/.cache/cluster-inventory/plugins/access-check-<version>-<source digest>/``;
a cold build compiles client-go (a few minutes on two cores, shared with the upstream
plugins' build).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from cluster_inventory.testing.gobuild import build_source, cache_root, is_executable
from cluster_inventory_workshop.versions import CLUSTER_INVENTORY_API_VERSION

__all__ = ["access_check"]

_SOURCE = Path(__file__).parent / "accesscheck"
_MODULE = "sigs.k8s.io/cluster-inventory-api"


def access_check(*, progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of ``access-check``, building it on first use (cached).

    Run it as ``access-check -kubeconfig HUB -namespace NS -clusterprofile-provider-file F``.

    Args:
        progress: Called with short status lines while building.

    Returns:
        The executable.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: A download or the build failed (the message carries ``go``'s output).
    """
    digest = hashlib.sha256()
    for file in sorted(_SOURCE.glob("*.go")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    name = f"access-check-{CLUSTER_INVENTORY_API_VERSION}-{digest.hexdigest()[:12]}"
    target = cache_root() / "plugins" / name / "access-check"
    if is_executable(target):
        return target
    return build_source(
        _SOURCE,
        target,
        lock=cache_root() / "plugins" / ".build.lock",
        work=cache_root() / "build" / "access-check",
        requires={_MODULE: CLUSTER_INVENTORY_API_VERSION},
        progress=progress,
    )
