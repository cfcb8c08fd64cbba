"""One line for a YAML parse error, as every reader of a person's YAML reports it.

PyYAML's own message spans several lines and names the stream ``<unicode string>``; a
person wants the line and column in their file and what the parser found there.
"""

from __future__ import annotations

import yaml

__all__ = ["describe_yaml_error"]


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """Describe a YAML error in one line.

    Args:
        exc: What ``yaml.safe_load`` (or ``safe_load_all``) raised.

    Returns:
        ``not valid YAML at line L, column C: <problem> (<context>)``; line and column
        count from 1 and are left out when PyYAML gives no position.
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "cannot be parsed"
    context = getattr(exc, "context", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {problem}" + (f" ({context})" if context else "")
