"""Command-line interface: ``cluster-inventory`` and the kubectl plugin ``kubectl-inventory``.

:func:`main` answers the top-level ``--help`` itself (:mod:`cluster_inventory.cli._help`)
and imports the typer app only for real commands, so that the help a user types first comes
back at once.
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
