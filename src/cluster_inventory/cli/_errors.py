"""The CLI's one error form: ``error: MESSAGE`` on stderr, exit code 1."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["fail"]


def fail(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr and exit with code 1 (the CLI's one error form)."""
    sys.stdout.flush()
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(1)
