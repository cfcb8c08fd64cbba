"""The consumer's provider file (KEP-5339), kept current while the runtime runs.

Read at start (an invalid or unreadable file is an error then: a fleet with no way to reach
its members is no fleet), then polled: a change is parsed and handed on, an invalid change
is ignored and the last good configuration stays, and a file that cannot be read is not an
empty one either (logged once, counted, the last good configuration stays).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from cluster_inventory.credentials import ProviderConfig, ProviderConfigError, load_provider_file

__all__ = ["ProviderFile"]

_log = logging.getLogger("cluster_inventory.runtime")


class ProviderFile:
    """A provider file and its last good configuration.

    Args:
        path: The file (``--clusterprofile-provider-file``).
        poll: Seconds between checks for a change.
        on_change: Called with the new configuration after a valid change.
        count: Called with ``loaded``, ``invalid`` or ``unreadable`` for each change seen
            (the runtime's reload metric).

    Raises:
        ProviderConfigError: The file cannot be read or is invalid at start.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        poll: float = 2.0,
        on_change: Callable[[ProviderConfig], object] = lambda _: None,
        count: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.path = Path(path)
        self.poll = poll
        self._on_change = on_change
        self._count = count
        try:
            self._content = self.path.read_bytes()
        except OSError as exc:
            raise ProviderConfigError(str(self.path), "", f"cannot read: {exc.strerror}") from None
        #: The configuration in use: the last valid one read.
        self.config = load_provider_file(self.path)

    def reload(self) -> ProviderConfig | None:
        """Read the file again.

        Returns:
            The new configuration (also kept as :attr:`config`), or None if the file is now
            invalid (logged; the last good configuration stays).
        """
        try:
            config = load_provider_file(self.path)
        except ProviderConfigError as exc:
            _log.error("provider file change ignored: %s", exc)
            self._count("invalid")
            return None
        self._count("loaded")
        self.config = config
        return config

    async def watch(self) -> None:
        """Poll for changes until cancelled; each valid change goes to ``on_change``."""
        unreadable = False
        while True:
            await asyncio.sleep(self.poll)
            try:
                content = await asyncio.to_thread(self.path.read_bytes)
            except OSError as exc:
                # Unreadable is not empty: the last good configuration stays in use.
                if not unreadable:
                    _log.error("cannot read the provider file; keeping the last good one: %s", exc)
                    self._count("unreadable")
                unreadable = True
                continue
            if unreadable:
                _log.info("the provider file can be read again")
            unreadable = False
            if content == self._content:
                continue
            self._content = content
            config = self.reload()
            if config is not None:
                self._on_change(config)
