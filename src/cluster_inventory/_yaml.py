"""One safe YAML loader for text others wrote (Secrets, files, manifests), bounded in depth.

libyaml's loader is ~10x faster than PyYAML's own, but it builds nodes by recursing in C: a
document nested ~40,000 deep (80 KB of ``[``, small enough for a Secret) overflows the C
stack and kills the process, and PyYAML's own loader raises ``RecursionError`` at ~500.
The nesting is counted first on libyaml's event stream, which is iterative and stops at the
first level too many, so a hostile document costs microseconds and a kubeconfig about half
a load more. Kubernetes objects nest a few dozen levels at most.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "YAMLDepthError", "describe", "load", "load_all"]

#: Deepest nesting of mappings and sequences accepted.
MAX_DEPTH = 100

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YAMLDepthError(yaml.YAMLError):
    """A document nests deeper than :data:`MAX_DEPTH`.

    A ``yaml.YAMLError``, so callers that handle malformed YAML handle this too.
    """

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")
        self.problem = str(self)


def _check_depth(text: str) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YAMLDepthError
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str) -> Any:
    """Parse one YAML document with a safe loader (libyaml's when PyYAML has it).

    Raises:
        yaml.YAMLError: The text is not YAML, holds several documents, or nests deeper
            than :data:`MAX_DEPTH` (:class:`YAMLDepthError`).
    """
    _check_depth(text)
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def load_all(text: str) -> list[Any]:
    """Parse every document of a YAML stream (see :func:`load`).

    Raises:
        yaml.YAMLError: The text is not YAML or nests deeper than :data:`MAX_DEPTH`.
    """
    _check_depth(text)
    return list(yaml.load_all(text, Loader=_LOADER))


def describe(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where and what, never the offending line itself.

    PyYAML's own message quotes the line it stopped at, over several lines; in a Secret
    manifest that line may be the password.

    Returns:
        E.g. ``not valid YAML at line 4, column 1: found unexpected end of stream (while
        scanning a quoted scalar at line 3, column 13)``.
    """
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        line, column = context_mark.line + 1, context_mark.column + 1
        problem += f" ({context} at line {line}, column {column})"
    return f"not valid YAML{where}: {problem}"
