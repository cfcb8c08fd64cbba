"""cluster-inventory: the SIG-Multicluster Cluster Inventory API in Python.

Subpackages, bottom-up: ``api`` (models, constants, CRDs; no I/O), ``kube`` (the only
user of kubernetes_asyncio), ``credentials`` (KEP-5339 consumer side), ``manager`` and
``runtime`` (and ``agent``, a pull-mode member's side), then ``integrations`` and ``cli``.
``testing`` starts a local fleet of real control planes for tests, benchmarks and the demo.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Lazy: the exec plugins import this package on every credential fetch, and
    # importlib.metadata is a measurable share of their start-up.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("cluster-inventory")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        value = "0.0.0"
    globals()["__version__"] = value
    return value
