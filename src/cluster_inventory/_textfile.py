"""One way to read a text file a person handed us (kubeconfig, provider file, manifest, list).

``Path.read_text`` raises two unrelated kinds of error: ``OSError`` (missing, a directory,
no permission) and ``UnicodeDecodeError`` (a binary file, a file in another encoding). A
caller that catches only the first prints a traceback for the second. Here both become one
:class:`UnreadableFileError` carrying the path and the problem, so a command can print one
``error:`` line that names the file and says what is wrong with it.
"""

from __future__ import annotations

import os
from typing import TextIO

__all__ = ["UnreadableFileError", "read_stream", "read_text"]


class UnreadableFileError(ValueError):
    """A file cannot be read as UTF-8 text.

    Attributes:
        path: The file as the caller named it (``-`` for standard input).
        problem: What is wrong, e.g. ``cannot read: No such file or directory`` or
            ``not UTF-8 text (byte 0xff at offset 17)``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _not_utf8(exc: UnicodeDecodeError) -> str:
    byte = exc.object[exc.start : exc.start + 1]
    return f"not UTF-8 text (byte 0x{byte.hex()} at offset {exc.start})"


def read_text(path: str | os.PathLike[str]) -> str:
    """Read ``path`` as UTF-8 text.

    Args:
        path: The file.

    Returns:
        Its text.

    Raises:
        UnreadableFileError: The file is missing, a directory, not readable, or not UTF-8;
            the message names the file and the problem (the OS's words for an OS error).
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise UnreadableFileError(name, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(name, _not_utf8(exc)) from None


def read_stream(stream: TextIO, name: str = "-") -> str:
    """Read a text stream (standard input) to its end.

    Args:
        stream: An open text stream, e.g. ``sys.stdin``.
        name: How messages name it.

    Returns:
        Its text.

    Raises:
        UnreadableFileError: The stream cannot be read or is not text in its encoding.
    """
    # The bytes, where there are any: Python decodes standard input with
    # ``surrogateescape`` under a C locale, which hides a binary file until a parser trips.
    raw = getattr(stream, "buffer", None)
    try:
        if raw is None:
            return stream.read()
        return bytes(raw.read()).decode()
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(name, _not_utf8(exc)) from None
    except OSError as exc:
        raise UnreadableFileError(name, f"cannot read: {exc.strerror or exc}") from None
