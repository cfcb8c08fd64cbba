"""Every wire name is written once, in ``api/constants.py`` (STYLE.md, Round 3)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cluster_inventory

PACKAGE = Path(cluster_inventory.__file__).parent
# A label, annotation or Secret type key: ``[prefix.]domain/name``, whole string.
_KEY = re.compile(
    r"^([a-z0-9-]+\.)*(cluster-inventory\.dev|x-k8s\.io|k8s\.io|kubernetes\.io|argoproj\.io)"
    r"/[A-Za-z0-9._-]+$"
)
# An apiVersion (``group/v1beta2``) is a version, not a wire name of ours.
_API_VERSION = re.compile(r"/v\d+((alpha|beta)\d+)?$")
#: Where a literal may stay: the constants themselves, and the test harness (tests only).
_EXEMPT = ("api/constants.py", "testing/")


def _literals(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            # f"{PROJECT_DOMAIN}/name" outside constants is a wire name defined twice.
            if (
                isinstance(first, ast.FormattedValue)
                and isinstance(first.value, ast.Name)
                and first.value.id == "PROJECT_DOMAIN"
            ):
                found.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _KEY.match(node.value)
            and not _API_VERSION.search(node.value)
        ):
            found.append((node.lineno, node.value))
    return found


def test_wire_names_live_in_api_constants() -> None:
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(_EXEMPT):
            continue
        stray += [f"{rel}:{line}: {text}" for line, text in _literals(ast.parse(path.read_text()))]
    assert stray == [], "move these into cluster_inventory/api/constants.py:\n" + "\n".join(stray)
