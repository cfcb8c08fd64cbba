"""YAML others wrote, read safely: kubectl's block subset fast, anything else bounded in depth.

Two readers behind one module, so that there is one place to read YAML:

- :func:`load_block` reads the block-YAML subset that kubectl and client-go write for
  kubeconfigs, on the standard library: importing PyYAML costs tens of milliseconds, more
  than the rest of an exec plugin run. It reads block mappings, block sequences, plain or
  quoted scalars and empty flow collections, and raises :class:`Unsupported` for anything
  else (anchors, block scalars, non-empty flow collections, tabs), so the caller falls back
  to :func:`load` and never gets a different answer.
- :func:`load` and :func:`load_all` parse anything else with a safe loader (libyaml's when
  PyYAML has it, ~10x faster than PyYAML's own). libyaml builds nodes by recursing in C: a
  document nested ~40,000 deep (80 KB of ``[``, small enough for a Secret) overflows the C
  stack and kills the process, and PyYAML's own loader raises ``RecursionError`` at ~500.
  The nesting is counted first on libyaml's event stream, which is iterative and stops at
  the first level too many, so a hostile document costs microseconds and a kubeconfig about
  half a load more. Kubernetes objects nest a few dozen levels at most.

PyYAML is imported on first use of the second kind only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a measurable share of an exec plugin's cold start
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_DEPTH",
    "Unsupported",
    "YAMLDepthError",
    "describe",
    "load",
    "load_all",
    "load_block",
]

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "r": "\r", "0": "\0"}
_SPECIAL_START = set("&*!|>%@`{[?")


class Unsupported(Exception):
    """The text uses YAML this reader does not handle."""


def _scalar(text: str) -> Any:
    text = text.strip()
    if not text or text == "~" or text == "null":
        return None
    if text == "{}":
        return {}
    if text == "[]":
        return []
    first = text[0]
    if first == "'":
        if len(text) < 2 or not text.endswith("'"):
            raise Unsupported
        return text[1:-1].replace("''", "'")
    if first == '"':
        if len(text) < 2 or not text.endswith('"'):
            raise Unsupported
        out, i, body = [], 0, text[1:-1]
        while i < len(body):
            ch = body[i]
            if ch == "\\":
                nxt = body[i + 1 : i + 2]
                if nxt not in _ESCAPES:
                    raise Unsupported
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if ch == '"':
                raise Unsupported
            out.append(ch)
            i += 1
        return "".join(out)
    if first in _SPECIAL_START or text.startswith(("- ", ": ")) or ": " in text or " #" in text:
        raise Unsupported
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text.lstrip("-").isdigit() or text.lower() in ("yes", "no", "on", "off", ".inf", ".nan"):
        raise Unsupported  # numbers and YAML 1.1 booleans: let PyYAML decide
    return text


def _split_key(line: str) -> tuple[str, str]:
    if line.startswith(("'", '"')):
        quote = line[0]
        end = line.find(quote, 1)
        if end < 0 or line[end + 1 : end + 2] != ":":
            raise Unsupported
        key, rest = line[1:end], line[end + 2 :]
    else:
        key, sep, rest = line.partition(":")
        if not sep or (rest and not rest.startswith(" ")) or key.strip() != key or not key:
            raise Unsupported
        if key[0] in _SPECIAL_START or key.startswith("- ") or "#" in key:
            raise Unsupported
    return key, rest.strip()


def load_block(text: str) -> Any:
    """Parse ``text``; raise :class:`Unsupported` if it leaves the kubeconfig subset."""
    lines: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if "\t" in raw:
            raise Unsupported
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        lines.append((len(raw) - len(raw.lstrip(" ")), raw.strip()))
    if not lines:
        return None
    value, pos = _block(lines, 0, lines[0][0])
    if pos != len(lines):
        raise Unsupported
    return value


def _block(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[Any, int]:
    if lines[pos][1].startswith("- ") or lines[pos][1] == "-":
        return _sequence(lines, pos, indent)
    return _mapping(lines, pos, indent)


def _mapping(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while pos < len(lines) and lines[pos][0] == indent:
        text = lines[pos][1]
        if text.startswith("- "):
            break
        key, rest = _split_key(text)
        if key in out:
            raise Unsupported
        pos += 1
        if rest:
            out[key] = _scalar(rest)
        elif pos < len(lines) and (
            lines[pos][0] > indent or (lines[pos][0] == indent and lines[pos][1].startswith("- "))
        ):
            out[key], pos = _block(lines, pos, lines[pos][0])
        else:
            out[key] = None
    if pos < len(lines) and lines[pos][0] > indent:
        raise Unsupported
    return out, pos


def _sequence(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while (
        pos < len(lines)
        and lines[pos][0] == indent
        and (lines[pos][1].startswith("- ") or lines[pos][1] == "-")
    ):
        item = lines[pos][1][2:].strip()
        if not item:
            pos += 1
            if pos < len(lines) and lines[pos][0] > indent:
                value, pos = _block(lines, pos, lines[pos][0])
                out.append(value)
            else:
                out.append(None)
            continue
        if item.startswith(("'", '"')) and not item.rstrip().endswith(":"):
            try:
                _split_key(item)
            except Unsupported:
                out.append(_scalar(item))
                pos += 1
                continue
        if ":" in item and (item.endswith(":") or ": " in item):
            # "- key: value" opens a mapping whose keys sit at indent + 2.
            child_indent = indent + 2
            rewritten = [*lines[:pos], (child_indent, item), *lines[pos + 1 :]]
            value, new_pos = _mapping(rewritten, pos, child_indent)
            lines[:] = rewritten
            out.append(value)
            pos = new_pos
            continue
        out.append(_scalar(item))
        pos += 1
    return out, pos


#: Deepest nesting of mappings and sequences accepted.
MAX_DEPTH = 100

_DEPTH_ERROR: Any = None


def _depth_error() -> Any:
    """:class:`YAMLDepthError`, made on first use (it subclasses PyYAML's error)."""
    global _DEPTH_ERROR
    if _DEPTH_ERROR is None:
        import yaml

        class YAMLDepthError(yaml.YAMLError):
            """A document nests deeper than :data:`MAX_DEPTH`.

            A ``yaml.YAMLError``, so callers that handle malformed YAML handle this too.
            """

            def __init__(self) -> None:
                super().__init__(f"nested deeper than {MAX_DEPTH} levels")
                self.problem = str(self)

        YAMLDepthError.__module__ = __name__
        YAMLDepthError.__qualname__ = "YAMLDepthError"
        _DEPTH_ERROR = YAMLDepthError
    return _DEPTH_ERROR


if TYPE_CHECKING:
    import yaml

    class YAMLDepthError(yaml.YAMLError):
        """A document nests deeper than :data:`MAX_DEPTH` (a ``yaml.YAMLError``)."""

        problem: str

else:

    def __getattr__(name: str) -> Any:
        if name == "YAMLDepthError":
            return _depth_error()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_depth(text: str) -> None:
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _depth_error()
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str) -> Any:
    """Parse one YAML document with a safe loader (libyaml's when PyYAML has it).

    Raises:
        yaml.YAMLError: The text is not YAML, holds several documents, or nests deeper
            than :data:`MAX_DEPTH` (:class:`YAMLDepthError`).
    """
    import yaml

    _check_depth(text)
    return yaml.load(text, Loader=_loader())  # noqa: S506 - a safe loader


def load_all(text: str) -> list[Any]:
    """Parse every document of a YAML stream (see :func:`load`).

    Raises:
        yaml.YAMLError: The text is not YAML or nests deeper than :data:`MAX_DEPTH`.
    """
    import yaml

    _check_depth(text)
    return list(yaml.load_all(text, Loader=_loader()))


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
