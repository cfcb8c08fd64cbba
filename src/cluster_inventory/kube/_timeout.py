"""The one client timeout: seconds a request waits for an answer (docs/cli.md, Timeouts)."""

from __future__ import annotations

import os

from cluster_inventory.api.constants import REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV

__all__ = ["DEFAULT_TIMEOUT", "request_timeout"]

#: Seconds a single non-streaming request may take, unless :data:`REQUEST_TIMEOUT_ENV` says
#: otherwise (:func:`request_timeout`).
DEFAULT_TIMEOUT = REQUEST_TIMEOUT


def request_timeout() -> float:
    """Seconds a request waits for an answer when its caller gives no ``timeout``.

    ``$CLUSTER_INVENTORY_REQUEST_TIMEOUT`` (set by the CLI's global ``--request-timeout``)
    when it holds a positive number, else :data:`DEFAULT_TIMEOUT`. Read at each call, so a
    command's option applies to every client it makes.
    """
    try:
        seconds = float(os.environ.get(REQUEST_TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_TIMEOUT
