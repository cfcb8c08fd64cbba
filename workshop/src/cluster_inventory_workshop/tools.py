"""Build the tools tests run: ``helm``, ``promtool``, ``prometheus`` and ``toxiproxy``.

The chart is linted and rendered by Helm, the alerting and recording rules are checked and
unit-tested by Prometheus's ``promtool``; the availability test scrapes a profile-condition
exporter with a real ``prometheus`` and reads the outage back from its HTTP API; the fault
tests put Shopify's Toxiproxy (its ``cmd/server``) in front of a fleet's servers. Release
tarballs cannot be downloaded here, so all four are compiled from their Go modules (pinned
in :mod:`cluster_inventory_workshop.versions`) into
``~/.cache/cluster-inventory/tools/<name>-<version>/``, like the control-plane binaries.
``TEST_ASSET_HELM``, ``TEST_ASSET_PROMTOOL``, ``TEST_ASSET_PROMETHEUS`` and
``TEST_ASSET_TOXIPROXY`` point at existing binaries instead.
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
    is_executable,
)
from cluster_inventory_workshop.versions import (
    HELM_VERSION,
    KUBERNETES_VERSION,
    PROMETHEUS_VERSION,
    TOXIPROXY_VERSION,
)

__all__ = ["TOOLS", "find_tool", "install_tool"]


def _helm() -> GoModuleBuild:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return GoModuleBuild(
        module="helm.sh/helm/v3",
        version=HELM_VERSION,
        packages={"helm": "helm.sh/helm/v3/cmd/helm"},
        ldflags=(
            # `helm version` reports the release instead of the module's bare "v3.22".
            f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
            # Without these (set by Helm's Makefile) `helm template` and `helm lint` assume
            # Kubernetes v1.20; they take the version of the control planes we test against.
            *(
                f"-X helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
                for pkg in ("lint/rules", "chartutil")
                for part, value in (("Major", major), ("Minor", minor))
            ),
        ),
    )


def _prometheus_module(binary: str) -> GoModuleBuild:
    # Prometheus 3.x tags its Go module v0.3MM.P for release 3.MM.P.
    minor, patch = PROMETHEUS_VERSION.removeprefix("v0.").split(".")
    release = f"{minor[0]}.{int(minor[1:])}.{patch}"
    # The module's go.mod has exclude and replace directives, which `go install ...@version`
    # refuses; GoModuleBuild's wrapper module requires it as a dependency instead.
    return GoModuleBuild(
        module="github.com/prometheus/prometheus",
        version=PROMETHEUS_VERSION,
        packages={binary: f"github.com/prometheus/prometheus/cmd/{binary}"},
        ldflags=(f"-X github.com/prometheus/common/version.Version={release}",),
        # Service discovery plugins (cloud SDKs) are not needed to check rules or to scrape
        # static targets and would triple the compile.
        tags=("remove_all_sd",),
    )


def _promtool() -> GoModuleBuild:
    return _prometheus_module("promtool")


def _prometheus() -> GoModuleBuild:
    # Without the `builtinassets` tag the web UI's assets are not embedded: its pages answer
    # 500, the HTTP API (/api/v1/query_range, /api/v1/targets) works, which is all we read.
    return _prometheus_module("prometheus")


def _toxiproxy() -> GoModuleBuild:
    return GoModuleBuild(
        module="github.com/Shopify/toxiproxy/v2",
        version=TOXIPROXY_VERSION,
        packages={"toxiproxy": "github.com/Shopify/toxiproxy/v2/cmd/server"},
        # What `toxiproxy-server -version` reports (set by its Makefile too).
        ldflags=(f"-X github.com/Shopify/toxiproxy/v2.Version={TOXIPROXY_VERSION.lstrip('v')}",),
    )


#: Tool name to how it is built.
TOOLS: Mapping[str, Callable[[], GoModuleBuild]] = MappingProxyType(
    {"helm": _helm, "promtool": _promtool, "prometheus": _prometheus, "toxiproxy": _toxiproxy}
)


def _tool_path(name: str) -> Path:
    build = TOOLS[name]()
    return cache_root() / "tools" / f"{name}-{build.version}" / name


def _env_name(name: str) -> str:
    return f"TEST_ASSET_{name.upper()}"


def find_tool(name: str) -> Path:
    """Return the path of a tool of :data:`TOOLS` without building it.

    ``$TEST_ASSET_<NAME>`` wins, then the cache.

    Args:
        name: A key of :data:`TOOLS`.

    Returns:
        The executable.

    Raises:
        KeyError: ``name`` is not a known tool.
        AssetNotFoundError: Neither exists; the message says how to build it.
    """
    cached = _tool_path(name)
    explicit = os.environ.get(_env_name(name))
    path = Path(explicit) if explicit else cached
    if path.is_file() and os.access(path, os.X_OK):
        return path
    raise AssetNotFoundError(
        f"{name} not found at {path}"
        + (f" ({_env_name(name)})" if explicit else "")
        + f". Build it once (cached under {cached.parent}) with `cluster-inventory-workshop "
        f"install-assets` or `make assets` (needs Go), or set {_env_name(name)} to an "
        "existing binary."
    )


def install_tool(name: str, *, progress: Callable[[str], None] | None = None) -> Path:
    """Build a tool of :data:`TOOLS` into the cache unless it is there already.

    Concurrent callers serialise on a file lock; the binary appears only once complete.

    Args:
        name: A key of :data:`TOOLS`.
        progress: Called with short status lines while building.

    Returns:
        The path of the cached executable.

    Raises:
        KeyError: ``name`` is not a known tool.
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: The build failed (the message carries the failing command's output).
    """
    target = _tool_path(name)
    if is_executable(target):
        return target
    return build_once(
        TOOLS[name](),
        name,
        target,
        lock=cache_root() / "tools" / f".{name}.lock",
        work=cache_root() / "build" / f"tool-{name}",
        progress=progress,
    )
