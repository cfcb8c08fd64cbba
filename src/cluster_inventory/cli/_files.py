"""Small file and path helpers shared by the CLI commands and the demo."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["console_script", "write_private"]


def console_script(name: str) -> str:
    """Absolute path of one of our console scripts (beside this interpreter, else PATH).

    Falls back to the bare ``name`` so an exec config still names the plugin it wants.
    """
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name) or name


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (it may hold a token or a key).

    Raises:
        OSError: The file cannot be written.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
