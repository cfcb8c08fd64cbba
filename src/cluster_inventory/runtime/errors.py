"""Errors of the multicluster runtime, each naming the cluster or object it concerns."""

from __future__ import annotations

__all__ = ["CacheNotWatched", "ClusterNotEngaged", "FleetError"]


class FleetError(Exception):
    """Base of the runtime's own errors."""


class ClusterNotEngaged(FleetError, LookupError):
    """No engaged cluster has this name (never engaged, or disengaged since)."""


class CacheNotWatched(FleetError, LookupError):
    """A reconciler read a kind that no reconciler of the fleet watches."""
