"""kubernetes_asyncio's client core, imported without its 2-second package initialiser.

``import kubernetes_asyncio.client`` imports every generated API class and ~800 model
classes: about 2.5 s on the project machine, more than everything else a CLI command or the
cluster manager does before its first request. This project uses only the core
(``ApiClient``, ``Configuration``, the REST client and exceptions), so the packages
``kubernetes_asyncio``, ``kubernetes_asyncio.client`` and ``kubernetes_asyncio.client.models``
are registered as *deferred* packages: their submodules import normally, and the package's
own ``__init__`` runs, into the same module object, on the first attribute it does not have
yet. Code that later does ``from kubernetes_asyncio.client import CoreV1Api`` therefore gets
the real thing, just later. If the library was imported before us, nothing is changed.

The core itself imports two libraries it needs only for paths this project never takes:
``urllib3`` (basic-auth headers) and ``dateutil.parser`` (dates in typed models; ours are
dicts), which also loads ``ctypes`` and ``decimal``: 76 modules and 4 MiB of a runtime's
start-up memory (issue 48). They are deferred the same way, each only if nothing imported it
before; ``dateutil.parser.parse``, which the core binds at import, is a stand-in that loads
the package on its first call and then hands over to the real function.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["ApiClient", "ApiException", "Configuration", "rest"]

_DEFERRED = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")
#: Libraries the core imports for paths we never take, with the names it binds at import.
_DEFERRED_DEPENDENCIES: dict[str, tuple[str, ...]] = {"urllib3": (), "dateutil.parser": ("parse",)}


# Names the import system and tooling probe; they must not trigger the initialiser.
_NEVER_LOADS = frozenset(
    {
        "__path__",
        "__file__",
        "__spec__",
        "__loader__",
        "__package__",
        "__builtins__",
        "__wrapped__",
        "__origin__",
        "_ci_spec",
        "_ci_loaded",
    }
)


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first missing attribute."""

    _ci_spec: Any
    _ci_loaded: bool

    def __getattr__(self, name: str) -> Any:
        if name in _NEVER_LOADS or self.__dict__.get("_ci_loaded", True):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self._ci_load()
        return getattr(self, name)

    def _ci_load(self) -> None:
        """Run the package's ``__init__`` into this module (once)."""
        if self.__dict__.get("_ci_loaded", True):
            return
        self.__dict__["_ci_loaded"] = True
        self._ci_spec.loader.exec_module(self)


def _stand_in(module: _DeferredPackage, name: str) -> Callable[..., Any]:
    """A function bound at import in place of ``module.name``: loads ``module``, then calls it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        module._ci_load()
        return getattr(module, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _defer(name: str, stand_ins: tuple[str, ...] = ()) -> None:
    parent, _, child = name.rpartition(".")
    if parent:
        spec = importlib.machinery.PathFinder.find_spec(name, sys.modules[parent].__path__)
    else:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"cannot locate package {name}")
    module = _DeferredPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__package__ = name
    module.__loader__ = spec.loader
    module.__dict__["_ci_spec"] = spec
    module.__dict__["_ci_loaded"] = False
    for attr in stand_ins:
        module.__dict__[attr] = _stand_in(module, attr)
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)


if "kubernetes_asyncio" not in sys.modules:
    for _name in _DEFERRED:
        _defer(_name)
    for _name, _bound in _DEFERRED_DEPENDENCIES.items():
        _parent = _name.rpartition(".")[0]
        if _name not in sys.modules:
            if _parent:
                importlib.import_module(_parent)
            _defer(_name, _bound)

# import_module, not ``from a.b import c``: the latter probes the package with getattr and
# so would run its initialiser. Order matters: each submodule becomes an attribute of its
# package before api_client does ``from kubernetes_asyncio.client import rest``.
_exceptions = importlib.import_module("kubernetes_asyncio.client.exceptions")
_configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
rest: Any = importlib.import_module("kubernetes_asyncio.client.rest")
_api_client = importlib.import_module("kubernetes_asyncio.client.api_client")

ApiClient: Any = _api_client.ApiClient
Configuration: Any = _configuration.Configuration
ApiException: Any = _exceptions.ApiException
