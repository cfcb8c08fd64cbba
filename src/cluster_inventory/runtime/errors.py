"""Errors of the multicluster runtime, each naming the cluster or object it concerns."""

from __future__ import annotations

__all__ = ["CacheNotWatched", "ClusterNotEngaged", "FleetError", "TerminalError"]


class FleetError(Exception):
    """Base of the runtime's own errors."""


class ClusterNotEngaged(FleetError, LookupError):
    """No engaged cluster has this name (never engaged, or disengaged since)."""


class CacheNotWatched(FleetError, LookupError):
    """A reconciler read a kind that no reconciler of the fleet watches."""


class TerminalError(Exception):
    """Raise from a reconciler to stop retries of a request.

    controller-runtime's ``reconcile.TerminalError``: the error is logged and counted in
    ``controller_runtime_terminal_reconcile_errors_total``, and the request is not requeued.

    The request is reconciled again only when something changes (a new event for the object,
    a re-engagement of its cluster).
    """
