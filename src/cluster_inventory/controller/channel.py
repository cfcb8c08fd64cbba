"""Events one component sends and others map to the keys of their own queues.

controller-runtime's ``source.Channel``: a controller watches a channel of events that no
informer sees (a member started, a profile deleted) through a handler that maps each event to
its own requests. Here a :class:`Channel` is sent to by the one component that knows the
event and subscribed to by the others, so no component reaches into another to tell it.
Handlers run synchronously in the sender's task, in the order they subscribed; they only note
what the event touched and queue keys (no I/O), as an informer's event handlers do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Channel"]

T = TypeVar("T")


class Channel(Generic[T]):
    """One kind of event: whoever knows it sends, whoever cares subscribes.

    Args:
        name: What the events are, for ``repr`` and logs.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._handlers: list[Callable[[T], None]] = []

    def __repr__(self) -> str:
        return f"Channel({self.name!r}, {len(self._handlers)} subscribers)"

    def subscribe(self, handler: Callable[[T], None]) -> None:
        """Call ``handler(event)`` for every event sent from now on."""
        self._handlers.append(handler)

    def send(self, event: T) -> None:
        """Hand ``event`` to every subscriber, in the order they subscribed.

        Raises:
            Exception: What a handler raised (the later ones are not called).
        """
        for handler in self._handlers:
            handler(event)
