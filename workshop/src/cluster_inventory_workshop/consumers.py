"""Build the consumers' own controllers that the end-to-end tests run against our inventory.

Kueue's manager (MultiKueue) and the Knative Operator read ClusterProfiles with the upstream
``pkg/access`` library and run our exec plugin. The tests run their real binaries, compiled
from their Go modules (pinned in :mod:`cluster_inventory_workshop.versions`) into
``~/.cache/cluster-inventory/consumers/<name>-<version>/``, like the control planes:
``cluster-inventory-workshop install-assets`` builds them on a cold machine.
``TEST_ASSET_KUEUE`` and ``TEST_ASSET_KNATIVE_OPERATOR`` point at existing binaries instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from cluster_inventory.testing.assets import AssetNotFoundError
from cluster_inventory.testing.gobuild import (
    GoModuleBuild,
    build_once,
    cache_root,
    go_env,
    is_executable,
)
from cluster_inventory_workshop.upstream_crds import go_module_dir
from cluster_inventory_workshop.versions import KNATIVE_OPERATOR_VERSION, KUEUE_VERSION

__all__ = ["CONSUMERS", "find_consumer", "install_consumer", "knative_operator_data"]


def _kueue() -> GoModuleBuild:
    return GoModuleBuild(
        module="sigs.k8s.io/kueue",
        version=KUEUE_VERSION,
        packages={"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
        # Kueue logs and exports its version; without this it says v0.0.0-main.
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",),
    )


def _knative_operator() -> GoModuleBuild:
    return GoModuleBuild(
        module="knative.dev/operator",
        version=KNATIVE_OPERATOR_VERSION,
        packages={"knative-operator": "knative.dev/operator/cmd/operator"},
    )


#: Consumer name to how its binary is built.
CONSUMERS: Mapping[str, Callable[[], GoModuleBuild]] = MappingProxyType(
    {"kueue": _kueue, "knative-operator": _knative_operator}
)


def _path(name: str) -> Path:
    build = CONSUMERS[name]()
    return cache_root() / "consumers" / f"{name}-{build.version}" / name


def _env_name(name: str) -> str:
    return "TEST_ASSET_" + name.upper().replace("-", "_")


def find_consumer(name: str) -> Path:
    """Return the path of a consumer's binary without building it.

    ``$TEST_ASSET_<NAME>`` wins, then the cache.

    Args:
        name: A key of :data:`CONSUMERS`.

    Returns:
        The executable.

    Raises:
        KeyError: ``name`` is not a known consumer.
        AssetNotFoundError: Neither exists; the message says how to build it.
    """
    cached = _path(name)
    explicit = os.environ.get(_env_name(name))
    path = Path(explicit) if explicit else cached
    if is_executable(path):
        return path
    raise AssetNotFoundError(
        f"{name} not found at {path}"
        + (f" ({_env_name(name)})" if explicit else "")
        + f". Build it once (cached under {cached.parent}) with `cluster-inventory-workshop "
        f"install-assets` or `make assets` (needs Go), or set {_env_name(name)} to an "
        "existing binary."
    )


def install_consumer(name: str, *, progress: Callable[[str], None] | None = None) -> Path:
    """Build a consumer's binary into the cache unless it is there already.

    Concurrent callers serialise on a file lock; the binary appears only once complete.

    Args:
        name: A key of :data:`CONSUMERS`.
        progress: Called with short status lines while building.

    Returns:
        The path of the cached executable.

    Raises:
        KeyError: ``name`` is not a known consumer.
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: The build failed (the message carries the failing command's output).
    """
    target = _path(name)
    if is_executable(target):
        return target
    return build_once(
        CONSUMERS[name](),
        name,
        target,
        lock=cache_root() / "consumers" / f".{name}.lock",
        work=cache_root() / "build" / f"consumer-{name}",
        progress=progress,
    )


def knative_operator_data(*, progress: Callable[[str], None] | None = None) -> Path:
    """The operator's ``kodata`` directory (Serving's and Eventing's release manifests).

    The operator reads the manifests it applies from ``$KO_DATA_PATH``; they ship in its Go
    module beside its main package, so the module cache holds them.

    Raises:
        GoNotFoundError, GoBuildError: The module could not be downloaded.
    """
    go_env()
    module = go_module_dir("knative.dev/operator", KNATIVE_OPERATOR_VERSION, progress=progress)
    return module / "cmd" / "operator" / "kodata"
