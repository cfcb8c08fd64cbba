"""One set of Prometheus collectors per registry.

prometheus-client refuses to register a metric name twice in one registry, yet a process
may build many work queues, credential caches or managers. Each kind builds its collectors
once per registry through :func:`collectors_for` and shares them (telling instances apart
with labels such as the queue name).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

__all__ = ["collectors_for"]

T = TypeVar("T")
# Keyed by the registry object itself (weakly): an id() could be reused by a new registry.
_built: weakref.WeakKeyDictionary[CollectorRegistry, dict[Any, Any]] = weakref.WeakKeyDictionary()


def collectors_for(
    build: Callable[[CollectorRegistry], T], registry: CollectorRegistry = REGISTRY
) -> T:
    """Return ``build(registry)``, calling ``build`` only the first time for that registry."""
    per_registry = _built.setdefault(registry, {})
    if build not in per_registry:
        per_registry[build] = build(registry)
    found: T = per_registry[build]
    return found
