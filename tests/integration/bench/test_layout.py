"""bench/ is laid out like src/: scripts are entry points, shared code is private modules.

A benchmark script (``bench/NAME.py``) is run, never imported: what two benchmarks share
lives in a private module (``bench/_NAME.py`` or the ``bench/_fleet`` package) that both
import, and no bench module imports in a circle (``fleet_scale.py`` and ``_agents.py`` once
imported each other). Imports are read from the source (``ast``), so none of it runs here.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _module_name(path: Path) -> str:
    """``_fleet.run`` for ``bench/_fleet/run.py``, ``_fleet`` for its ``__init__.py``."""
    parts = path.relative_to(BENCH).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    """Every Python module under bench/ by its import name (bench/ is on ``sys.path``)."""
    return {_module_name(p): p for p in sorted(BENCH.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The bench modules ``name`` imports, anywhere in its source (lazy imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _scripts() -> set[str]:
    return {p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_")}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules in order, the first repeated), or []."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = "open"
        stack.append(name)
        for dep in sorted(graph[name]):
            if state.get(dep) == "open":
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        state[name] = "done"
        stack.pop()
        return []

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return []


def test_the_layout_reader_sees_the_imports_of_fleet_scale() -> None:
    graph = _graph()
    assert "fleet_scale" in _scripts()
    assert {"_agents", "_common"} <= graph["fleet_scale"], "absolute imports are read"
    assert "_fleet.live" in graph["_fleet.run"], "relative imports are resolved"


def test_no_bench_module_imports_a_benchmark_script() -> None:
    scripts = _scripts()
    offenders = {name: sorted(deps & scripts) for name, deps in _graph().items() if deps & scripts}
    assert not offenders, (
        f"benchmark scripts are entry points, not libraries: {offenders}; move what they "
        "share into a private bench module both import"
    )


def test_bench_modules_import_no_cycle() -> None:
    cycle = _cycle(_graph())
    assert not cycle, f"bench modules import in a circle: {' -> '.join(cycle)}"
