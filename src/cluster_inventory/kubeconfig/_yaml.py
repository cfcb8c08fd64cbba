"""A fast reader for the block-YAML subset that kubectl and client-go write for kubeconfigs.

Importing PyYAML costs tens of milliseconds, more than the rest of a plugin run. Kubeconfigs
written by ``kubectl config``/clientcmd use only block mappings, block sequences, plain or
quoted scalars and empty flow collections; this reads exactly that and raises
:class:`Unsupported` for anything else (anchors, block scalars, non-empty flow collections,
tabs), so the caller falls back to PyYAML and never gets a different answer.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Unsupported", "load"]

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


def load(text: str) -> Any:
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
