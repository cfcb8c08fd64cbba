"""Build the upstream exec credential plugins of ``sigs.k8s.io/cluster-inventory-api``.

Interop tests run the reference plugins (``secretreader``, ``kubeconfig-secretreader``)
exactly as a consumer would. No release binaries can be downloaded here, so the plugins are
compiled from the Go module at the version pinned in :mod:`cluster_inventory_workshop.versions`
into ``~/.cache/cluster-inventory/plugins/cluster-inventory-api-<version>/``. A cold build
compiles client-go (a few minutes on two cores); afterwards the cached binary is returned at
once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from cluster_inventory.testing.gobuild import (
    GoModuleBuild,
    build_once,
    cache_root,
    is_executable,
)
from cluster_inventory_workshop.versions import CLUSTER_INVENTORY_API_VERSION

__all__ = ["UPSTREAM_PLUGINS", "UPSTREAM_PLUGIN_DIR_ENV", "upstream_plugin"]

_MODULE = "sigs.k8s.io/cluster-inventory-api"

#: Plugin name to the main package that builds it.
UPSTREAM_PLUGINS: Mapping[str, str] = MappingProxyType(
    {
        "secretreader": f"{_MODULE}/plugins/secretreader/cmd/plugin",
        "kubeconfig-secretreader": f"{_MODULE}/plugins/kubeconfig-secretreader/cmd/plugin",
    }
)

#: Environment variable naming a directory that holds prebuilt ``<name>-plugin`` binaries.
UPSTREAM_PLUGIN_DIR_ENV = "CLUSTER_INVENTORY_UPSTREAM_PLUGIN_DIR"


def _plugins_dir() -> Path:
    return cache_root() / "plugins" / f"cluster-inventory-api-{CLUSTER_INVENTORY_API_VERSION}"


def upstream_plugin(
    name: str = "secretreader", *, progress: Callable[[str], None] | None = None
) -> Path:
    """Return the path of an upstream exec plugin, building it on first use.

    ``$CLUSTER_INVENTORY_UPSTREAM_PLUGIN_DIR/<name>-plugin`` wins if the variable is set.
    Otherwise the binary is taken from, or built into, the cache. Concurrent callers
    (parallel test processes) serialise on a file lock, and a binary appears in the cache
    only once complete.

    Args:
        name: A key of :data:`UPSTREAM_PLUGINS` (``"secretreader"`` or
            ``"kubeconfig-secretreader"``).
        progress: Called with short status lines while building.

    Returns:
        The path of the executable ``<name>-plugin``.

    Raises:
        ValueError: ``name`` is not a known plugin.
        FileNotFoundError: ``CLUSTER_INVENTORY_UPSTREAM_PLUGIN_DIR`` is set but holds no
            executable ``<name>-plugin``.
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: The build failed (the message carries the failing command's output).
    """
    package = UPSTREAM_PLUGINS.get(name)
    if package is None:
        known = ", ".join(sorted(UPSTREAM_PLUGINS))
        raise ValueError(f"unknown upstream plugin {name!r}; known plugins: {known}")
    binary = f"{name}-plugin"

    override = os.environ.get(UPSTREAM_PLUGIN_DIR_ENV)
    if override:
        path = Path(override) / binary
        if not is_executable(path):
            raise FileNotFoundError(
                f"{UPSTREAM_PLUGIN_DIR_ENV}={override} holds no executable {binary}"
            )
        return path

    target = _plugins_dir() / binary
    if is_executable(target):
        return target
    return build_once(
        GoModuleBuild(
            module=_MODULE, version=CLUSTER_INVENTORY_API_VERSION, packages={binary: package}
        ),
        binary,
        target,
        lock=cache_root() / "plugins" / ".build.lock",
        work=cache_root() / "build" / f"cluster-inventory-api-{name}",
        progress=progress,
    )
