"""glibc malloc settings for a process holding thousands of TLS connections.

uvloop gives every TLS connection a 256 KiB read buffer (``SSL_READ_MAX_SIZE``, allocated
with ``malloc``) and reads each TLS record into a 256 KiB ``bytes`` that it then shrinks.
glibc serves a block that large with ``mmap`` only until the first such block is freed: it
then raises its mmap threshold (up to 32 MiB) and serves the next ones from the heap, where
the buffers of live connections and the holes between them keep every page a read ever
touched. A cluster manager replica holding one watch per member so kept most of its RSS in
free or barely used heap (``docs/scale.md``). With the threshold fixed, each buffer is a
mapping of its own: only the pages a read touched are resident, and a closed connection
gives its pages back at once.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["MMAP_THRESHOLD", "tune_malloc"]

_log = logging.getLogger("cluster_inventory.kube")

#: Blocks of at least this many bytes get a mapping of their own (glibc's default start).
MMAP_THRESHOLD = 128 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt parameter numbers, from glibc's malloc.h


def tune_malloc() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD`; True if it was set.

    A no-op returning False off glibc (musl, macOS), or if ``$MALLOC_MMAP_THRESHOLD_`` is
    set (the operator's choice stands).
    """
    import os

    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    import ctypes  # here: only a process that runs the loop pays for it (issue 48)

    try:
        # The process's own symbols, libc's among them: ctypes.util.find_library would run
        # ``ldconfig -p`` in a child process at every start.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    if not done:
        _log.debug("mallopt(M_MMAP_THRESHOLD) refused")
    return done
