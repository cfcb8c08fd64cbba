"""Command-line interface: ``cluster-inventory`` and the kubectl plugin ``kubectl-inventory``."""

from __future__ import annotations

from cluster_inventory.cli.app import app, main

__all__ = ["app", "main"]
