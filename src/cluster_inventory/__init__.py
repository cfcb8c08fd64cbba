"""cluster-inventory: the SIG-Multicluster Cluster Inventory API in Python.

Subpackages, bottom-up: ``api`` (models, constants, CRDs; no I/O), ``kube`` (the only
user of kubernetes_asyncio), ``credentials`` (KEP-5339 consumer side), ``manager`` and
``runtime``, then ``integrations`` and ``cli``. ``testing`` starts a local fleet of real
control planes for tests, benchmarks and the demo.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cluster-inventory")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
