"""Lazy exports (PEP 562): a package's names are imported from their modules on first use.

``import cluster_inventory.api`` must not import pydantic (the CLI's fast paths read only
constants), and ``cluster_inventory.credentials`` must not import pydantic or
kubernetes_asyncio (its exec plugins pay every import on each cold start), and enabling the
pytest plugin of ``cluster_inventory.testing`` must not import aiohttp. These packages export
their names through the one ``__getattr__`` and ``__dir__`` made here.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # the typing module would slow the plugins' cold start
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str], modules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__`` (called while the package is being imported).
        where: Exported name -> the submodule of ``package`` that defines it.
        modules: Submodules reachable as attributes, imported on first use.

    Returns:
        ``(__getattr__, __dir__)``. A name is imported from its module on first access and
        then kept in the package's namespace; an unknown name raises ``AttributeError``.
    """
    namespace = vars(sys.modules[package])
    submodules = frozenset(modules)

    def __getattr__(name: str) -> Any:
        if name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        elif name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *where, *submodules])

    return __getattr__, __dir__
