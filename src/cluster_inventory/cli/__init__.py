"""Command-line interface: ``cluster-inventory`` and the kubectl plugin ``kubectl-inventory``.

:func:`main` answers the top-level ``--help`` itself (:mod:`cluster_inventory.cli._help`)
and runs ``get`` without the typer app (:mod:`cluster_inventory.cli._get`), so that what a
person types most comes back at once; every other command goes through typer.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of ``cluster-inventory`` and ``kubectl-inventory``."""
    if sys.argv[1:2] == ["get"]:
        from cluster_inventory.cli._get import parse_get_args, run_get

        options = parse_get_args(sys.argv[2:])
        if options is not None:
            try:
                run_get(**options)
            except KeyboardInterrupt:
                sys.exit(130)
            return
    if sys.argv[1:] == ["--help"]:
        from cluster_inventory.cli._help import top_level_help

        plugin = os.path.basename(sys.argv[0]).startswith("kubectl-")
        sys.stdout.write(top_level_help("kubectl inventory" if plugin else "cluster-inventory"))
        return
    _load_app()
    from cluster_inventory.cli.app import main as run

    run()


def _load_app() -> Any:
    """Import the typer app; ``cli.app`` then names it, not the submodule of that name."""
    from cluster_inventory.cli.app import app as typer_app

    globals()["app"] = typer_app  # importing the submodule bound ``app`` to the module
    return typer_app


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _load_app()
