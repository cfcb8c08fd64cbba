"""Every private module of a package is protected by an import-linter contract.

``pyproject.toml`` lists, per package, the modules only that package may import (import-linter
has no wildcard for "a leading underscore"); this keeps the list whole as modules come and go.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path

import cluster_inventory

PACKAGE = Path(cluster_inventory.__file__).parent
PYPROJECT = PACKAGE.parents[1] / "pyproject.toml"


def _private_modules() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__" or len(parts) < 3:
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
            found[parts[1]].add(".".join(parts))
    return found


def test_every_private_module_is_protected_for_its_package() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    protected: dict[str, set[str]] = defaultdict(set)
    for contract in contracts:
        if contract["type"] == "protected":
            for importer in contract["allowed_importers"]:
                protected[importer.removeprefix("cluster_inventory.")] |= set(
                    contract["protected_modules"]
                )
    missing = {
        package: sorted(modules - protected[package])
        for package, modules in _private_modules().items()
        if modules - protected[package]
    }
    assert missing == {}, "add these to the package's 'protected' contract in pyproject.toml"
