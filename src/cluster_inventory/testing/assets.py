"""Find or build the control-plane binaries: etcd, kube-apiserver, kube-controller-manager, kubectl.

Lookup follows envtest's contract (``pkg/envtest``): ``TEST_ASSET_<NAME>`` first
(``TEST_ASSET_KUBE_APISERVER``), then ``$KUBEBUILDER_ASSETS/<name>``, then our own cache
``~/.cache/cluster-inventory/assets/<versions>/``. Release tarballs cannot be downloaded here,
so :func:`install_assets` compiles the binaries from the ``k8s.io/kubernetes`` and
``go.etcd.io/etcd/server/v3`` Go modules at the versions pinned in
:mod:`cluster_inventory.testing.versions`. A cold build takes minutes on two cores; a warm one
returns at once.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cluster_inventory.testing.gobuild import GoModuleBuild, build_lock, cache_root
from cluster_inventory.testing.versions import ETCD_VERSION, KUBERNETES_VERSION

__all__ = [
    "BINARIES",
    "AssetNotFoundError",
    "assets_dir",
    "find_binary",
    "install_assets",
    "missing_binaries",
]

#: The binaries a local fleet uses.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")

INSTALL_HINT = (
    "Build them once (cached under {cache}) with `cluster-inventory testing install-assets` "
    "or `make assets` (needs Go), or point KUBEBUILDER_ASSETS or TEST_ASSET_{env} at existing "
    "binaries."
)


class AssetNotFoundError(FileNotFoundError):
    """A control-plane binary is absent; the message says how to get it."""


def assets_dir() -> Path:
    """Return the cache directory holding binaries of the pinned versions."""
    return cache_root() / "assets" / f"kubernetes-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}"


def _env_name(name: str) -> str:
    return "TEST_ASSET_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _candidates(name: str) -> Iterator[tuple[str, Path]]:
    explicit = os.environ.get(_env_name(name))
    if explicit:
        yield _env_name(name), Path(explicit)
    kubebuilder = os.environ.get("KUBEBUILDER_ASSETS")
    if kubebuilder:
        yield "KUBEBUILDER_ASSETS", Path(kubebuilder) / name
    yield "cache", assets_dir() / name


def find_binary(name: str) -> Path:
    """Return the path of a control-plane binary.

    Args:
        name: One of :data:`BINARIES`.

    Returns:
        The first executable found through ``TEST_ASSET_<NAME>``, ``KUBEBUILDER_ASSETS`` and
        the cache.

    Raises:
        AssetNotFoundError: No candidate exists or is executable; the message lists where it
            looked and how to install the assets.
    """
    looked: list[str] = []
    for source, path in _candidates(name):
        if path.is_file() and os.access(path, os.X_OK):
            return path
        looked.append(f"{path} ({source})")
    raise AssetNotFoundError(
        f"{name} not found; looked at: {', '.join(looked)}. "
        + INSTALL_HINT.format(cache=assets_dir(), env=_env_name(name)[len("TEST_ASSET_") :])
    )


def missing_binaries() -> list[str]:
    """Return the names of :data:`BINARIES` that :func:`find_binary` cannot find."""
    missing = []
    for name in BINARIES:
        try:
            find_binary(name)
        except AssetNotFoundError:
            missing.append(name)
    return missing


def _kubernetes_build() -> GoModuleBuild:
    version = KUBERNETES_VERSION
    major, minor = version.lstrip("v").split(".")[:2]
    stamps = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    ldflags = [
        f"-X {pkg}.{key}={value}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for key, value in stamps.items()
    ]
    return GoModuleBuild(
        module="k8s.io/kubernetes",
        version=version,
        packages={
            "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
            "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            "kubectl": "k8s.io/kubernetes/cmd/kubectl",
        },
        staging_replace_version="v0." + version.lstrip("v").split(".", 1)[1],
        ldflags=ldflags,
    )


def _etcd_build() -> GoModuleBuild:
    return GoModuleBuild(
        module="go.etcd.io/etcd/server/v3",
        version=ETCD_VERSION,
        packages={"etcd": "go.etcd.io/etcd/server/v3"},
    )


def install_assets(*, progress: Callable[[str], None] | None = None, force: bool = False) -> Path:
    """Build the pinned control-plane binaries into :func:`assets_dir` unless already there.

    Concurrent callers (parallel test runs, CI steps) serialise on a file lock; binaries
    appear in the cache only once complete.

    Args:
        progress: Called with short status lines (``"building kube-apiserver ..."``).
        force: Rebuild even if every binary is cached.

    Returns:
        The directory holding ``etcd``, ``kube-apiserver``, ``kube-controller-manager`` and
        ``kubectl``.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: A build failed (the message carries the failing command's output).
    """
    target = assets_dir()
    with build_lock(cache_root() / "assets" / ".install.lock"):
        if not force and all((target / b).is_file() for b in BINARIES):
            if progress:
                progress(f"assets cached in {target}")
            return target
        started = time.monotonic()
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        work = cache_root() / "build"
        _etcd_build().build(staging, work / "etcd", progress)
        _kubernetes_build().build(staging, work / "kubernetes", progress)
        target.mkdir(parents=True, exist_ok=True)
        for binary in BINARIES:
            os.replace(staging / binary, target / binary)
        shutil.rmtree(staging, ignore_errors=True)
        if progress:
            progress(f"assets built in {time.monotonic() - started:.0f} s into {target}")
        return target
