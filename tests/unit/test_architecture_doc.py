"""``docs/architecture.md`` names every package and module of ``src/cluster_inventory``.

Its "Package layout" section has one ``#### `PACKAGE/``` heading per package (the root is
``cluster_inventory/``) and under it one ``- `MODULE.py`: role`` line per module. A module
added without its line, or a line left after its module went, fails here (issue 45: the doc
said three controllers when there were five, and named eight modules nowhere).
"""

from __future__ import annotations

import re
from pathlib import Path

import cluster_inventory

PACKAGE = Path(cluster_inventory.__file__).parent
DOC = PACKAGE.parents[1] / "docs" / "architecture.md"
_HEADING = re.compile(r"^#### `([a-z_/]+/)`\s*$")
_MODULE = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*\.py)`: \S")


def _in_source() -> set[str]:
    """Every package (``pkg/``) and module (``pkg/mod.py``) under the package, relative."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        package = f"{path.parent.relative_to(PACKAGE).as_posix()}/".removeprefix("./")
        found.add(package or "cluster_inventory/")
        if path.name != "__init__.py":
            found.add(rel)
    return found


def _in_doc(text: str) -> set[str]:
    """What the "Package layout" section names, as :func:`_in_source` spells it."""
    section = text.split("\n## Package layout\n", 1)[1].split("\n## ", 1)[0]
    named, package = set(), None
    for line in section.splitlines():
        if heading := _HEADING.match(line):
            package = heading.group(1)
            named.add(package)
        elif (module := _MODULE.match(line)) and package is not None:
            prefix = "" if package == "cluster_inventory/" else package
            named.add(prefix + module.group(1))
    return named


def test_the_reader_sees_packages_and_modules() -> None:
    named = _in_doc(DOC.read_text())
    assert {"cluster_inventory/", "shapes.py", "manager/rules/", "manager/rules/status.py"} <= named


def test_every_package_and_module_is_named_with_its_role() -> None:
    named, source = _in_doc(DOC.read_text()), _in_source()
    assert sorted(source - named) == [], (
        "name these in docs/architecture.md, 'Package layout' (a '#### `pkg/`' heading per "
        "package, a '- `module.py`: role' line per module)"
    )


def test_nothing_named_is_gone() -> None:
    named, source = _in_doc(DOC.read_text()), _in_source()
    assert sorted(named - source) == [], "these are named in docs/architecture.md but gone"
