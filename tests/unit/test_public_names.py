"""No two public classes share a name (STYLE.md, "names that say what they are").

A reader who meets ``Cluster`` or ``Controller`` in a signature should know which one it is
without looking at the import. Every public module is imported and every public class it
defines or exports is collected by identity; the same class exported from several places is
one class. The API's versioned modules are the exception Kubernetes itself makes: ``v1alpha1``
and ``v1alpha2`` each define the same kinds.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import pytest

import cluster_inventory
from cluster_inventory import runtime

#: Modules that are the same types in another API version.
_VERSIONED = {"cluster_inventory.api.v1alpha1", "cluster_inventory.api.v1alpha2"}


def _public_modules() -> list[str]:
    names = [cluster_inventory.__name__]
    for info in pkgutil.walk_packages(cluster_inventory.__path__, "cluster_inventory."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _public_classes() -> dict[str, set[type]]:
    found: dict[str, set[type]] = defaultdict(set)
    for name in _public_modules():
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        names = exported if exported is not None else list(vars(module))
        for attr in names:
            if attr.startswith("_"):
                continue
            value = getattr(module, attr)
            if (
                inspect.isclass(value)
                and value.__module__.startswith("cluster_inventory.")
                and not value.__name__.startswith("_")
            ):
                found[value.__name__].add(value)
    return found


def test_no_two_public_classes_share_a_name() -> None:
    clashes = {}
    for name, classes in _public_classes().items():
        modules = {cls.__module__ for cls in classes}
        versioned = modules <= _VERSIONED and len(modules) == len(classes)
        if len(classes) > 1 and not versioned:
            clashes[name] = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in classes)
    assert clashes == {}


def test_the_runtime_cluster_alias_warns() -> None:
    with pytest.warns(DeprecationWarning, match="EngagedCluster"):
        alias = runtime.Cluster
    assert alias is runtime.EngagedCluster
