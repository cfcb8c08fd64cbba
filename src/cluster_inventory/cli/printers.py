"""Output in kubectl's shapes.

Tables are plain text laid out like kubectl's tabwriter (upper-case headers, columns padded by
three spaces, ``<none>`` for empty cells), never wrapped, so they read the same on a terminal,
in a pipe and in a golden test.

The other printers are pure functions of decoded objects (dicts, lists, strings, numbers, bools
and ``None``, as ``json.loads`` returns them) that reproduce what ``kubectl get`` prints:

* :func:`human_duration` and :func:`age`: the AGE column
  (``k8s.io/apimachinery/pkg/util/duration.HumanDuration``).
* :func:`to_json`, :func:`to_yaml` and :func:`list_object`: ``-o json``, ``-o yaml`` and the
  ``List`` kubectl wraps several objects in.
* :func:`jsonpath` and :func:`relaxed_jsonpath`: ``-o jsonpath=...``
  (``k8s.io/client-go/util/jsonpath``) and kubectl's ``RelaxedJSONPathExpression``.

Only the standard library and PyYAML are imported, so importing this module stays cheap for
the CLI.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from functools import cmp_to_key, lru_cache
from typing import Any, TypeAlias

import yaml

__all__ = [
    "JSONPathError",
    "age",
    "format_table",
    "human_duration",
    "jsonpath",
    "list_object",
    "relaxed_jsonpath",
    "to_json",
    "to_yaml",
]

_PADDING = 3


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Lay out ``rows`` under ``headers`` as kubectl does.

    Args:
        headers: Column titles; shown upper-case.
        rows: Cells as strings; an empty cell shows as ``<none>``.

    Returns:
        The table, one line per row, with a trailing newline.
    """
    cells = [[h.upper() for h in headers]] + [[c if c else "<none>" for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(widths[i] + _PADDING) for i, cell in enumerate(row[:-1])]
        lines.append("".join(padded) + row[-1])
    return "\n".join(lines) + "\n"


# --- AGE ---------------------------------------------------------------------------------------

_MINUTE = 60
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR_DAYS = 365


def human_duration(seconds: float) -> str:
    """Render a duration the way kubectl's AGE column does.

    Follows ``HumanDuration`` of ``k8s.io/apimachinery/pkg/util/duration``: about two
    significant units, the fraction of a second truncated toward zero. A clock skew of up to
    one second into the future still reads ``0s``.

    ====================  ===================================
    duration              shown as
    ====================  ===================================
    below -1 s            ``<invalid>``
    (-2 s, 0 s)           ``0s``
    below 2 minutes       ``Ns`` (``119s``)
    below 10 minutes      ``NmSs``, ``Nm`` when S is 0
    below 3 hours         ``Nm`` (``179m``)
    below 8 hours         ``NhMm``, ``Nh`` when M is 0
    below 48 hours        ``Nh``
    below 8 days          ``NdHh``, ``Nd`` when H is 0
    below 2 years         ``Nd`` (a year is 365 days)
    below 8 years         ``NyDd``, ``Ny`` when D is 0
    otherwise             ``Ny``
    ====================  ===================================

    Args:
        seconds: The duration in seconds; negative when the timestamp is in the future.

    Returns:
        The short text, e.g. ``"5m30s"``, ``"3h"`` or ``"2y110d"``.

    Raises:
        ValueError: ``seconds`` is NaN or infinite.
    """
    if not math.isfinite(seconds):
        raise ValueError(f"duration must be finite, got {seconds!r}")
    whole = math.trunc(seconds)  # Go: int(d.Seconds()), which truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 2 * _MINUTE:
        return f"{whole}s"
    minutes = whole // _MINUTE
    if minutes < 10:
        rest = whole % _MINUTE
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = whole // _HOUR
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d" if rest == 0 else f"{days}d{rest}h"
    if hours < 24 * _YEAR_DAYS * 2:
        return f"{days}d"
    years = days // _YEAR_DAYS
    if hours < 24 * _YEAR_DAYS * 8:
        rest = days % _YEAR_DAYS
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{years}y"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)
_GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def _parse_rfc3339(text: str) -> datetime | None:
    """Parse an RFC 3339 date-time (``metav1.Time`` / ``MicroTime``); ``None`` if it is not one.

    Args:
        text: E.g. ``"2026-11-23T10:00:00Z"`` or ``"2026-11-23T10:00:00.123456+02:00"``.

    Returns:
        An aware datetime, or ``None`` when ``text`` is not a valid RFC 3339 date-time.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    micro = int((match.group(7) or "").ljust(6, "0")[:6])
    tz = UTC
    if match.group(8) is None:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        try:
            tz = timezone(-offset if match.group(9) == "-" else offset)
        except ValueError:
            return None
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError:
        return None


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """Render the AGE of an object from its ``creationTimestamp``, as kubectl does.

    kubectl's ``translateTimestampSince`` prints ``<unknown>`` for a zero time and otherwise
    :func:`human_duration` of the time elapsed since.

    Args:
        timestamp: An RFC 3339 date-time such as ``"2026-11-23T10:00:00Z"`` (fractions and
            numeric offsets accepted); ``None``, ``""``, Go's zero time
            ``"0001-01-01T00:00:00Z"`` or anything unparsable gives ``<unknown>``.
        now: The clock; defaults to the current time. A naive datetime is taken as UTC.

    Returns:
        E.g. ``"5m30s"``, ``"<invalid>"`` for a timestamp more than a second in the future,
        or ``"<unknown>"``.
    """
    if not isinstance(timestamp, str):
        return "<unknown>"
    created = _parse_rfc3339(timestamp)
    if created is None or created == _GO_ZERO_TIME:
        return "<unknown>"
    current = now if now is not None else datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return human_duration((current - created).total_seconds())


# --- JSON --------------------------------------------------------------------------------------

_JSON_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_JSON_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')


def _json_escape(match: re.Match[str]) -> str:
    r"""Escape one character the way Go's ``encoding/json`` does (HTML-safe).

    Args:
        match: A single-character match of ``_JSON_NEEDS_ESCAPE``.

    Returns:
        The escape sequence; a lone surrogate (invalid UTF-8 in Go) becomes ``\ufffd``.
    """
    char = match.group()
    short = _JSON_SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if "\ud800" <= char <= "\udfff":
        return "\\ufffd"
    return f"\\u{ord(char):04x}"


def _json_string(text: str) -> str:
    r"""Quote ``text`` as Go's ``json.Marshal`` does.

    Args:
        text: Any string.

    Returns:
        The JSON string literal: non-ASCII kept as is; ``"``, ``\``, control characters,
        ``<``, ``>``, ``&``, U+2028 and U+2029 escaped.
    """
    return '"' + _JSON_NEEDS_ESCAPE.sub(_json_escape, text) + '"'


def _float_digits(value: float) -> tuple[str, int]:
    """Split a finite non-zero float into its shortest round-trip digits.

    Args:
        value: A finite float other than zero; the sign is ignored.

    Returns:
        ``(digits, point)`` with ``abs(value) == float("0." + digits) * 10**point`` and no
        trailing zeros in ``digits`` (Go's ``decimalSlice`` of ``strconv``).
    """
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digit_tuple)
    point = len(digits) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def _go_float(value: float, *, for_json: bool = False) -> str:
    """Format a float as Go does, shortest digits that round-trip.

    Args:
        value: The float.
        for_json: Format as ``encoding/json`` (positional, exponent only below 1e-6 or from
            1e21 on, ``e-7`` not ``e-07``); otherwise as ``fmt.Print`` / ``%v`` (``%g``
            shortest: exponent when it is below -4 or at least 6, ``1e+06``).

    Returns:
        E.g. ``"1"`` for 1.0, ``"0.5"``, ``"1e+06"`` (text) or ``"1000000"`` (JSON).

    Raises:
        ValueError: ``for_json`` and the value is NaN or infinite (Go's ``json: unsupported
            value``).
    """
    if math.isnan(value) or math.isinf(value):
        text = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        if for_json:
            raise ValueError(f"json: unsupported value: {text}")
        return text
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, point = _float_digits(value)
    exponent = point - 1
    if for_json:
        use_exponent = abs(value) < 1e-6 or abs(value) >= 1e21
    else:
        use_exponent = exponent < -4 or exponent >= 6
    if use_exponent:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        if for_json and exponent < 0:
            return f"{sign}{mantissa}e-{-exponent}"
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _marshal(value: object, indent: str | None, depth: int = 0) -> str:
    """Encode ``value`` as Go's ``json.Marshal`` / ``json.MarshalIndent`` does.

    Args:
        value: JSON-like data: mappings with string keys, lists or tuples, strings, ints,
            floats, bools and ``None``.
        indent: ``None`` for compact output (no spaces at all), else the indent unit.
        depth: The nesting level of ``value`` (for the indentation).

    Returns:
        The JSON text, object keys sorted, without a trailing newline.

    Raises:
        TypeError: A value or key of an unsupported type.
        ValueError: A NaN or infinite float.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _go_float(value, for_json=True)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
        separator = ":" if indent is None else ": "
        parts = [
            _json_string(key) + separator + _marshal(value[key], indent, depth + 1)
            for key in sorted(value)
        ]
        return _enclose("{", "}", parts, indent, depth)
    if isinstance(value, list | tuple):
        return _enclose("[", "]", [_marshal(v, indent, depth + 1) for v in value], indent, depth)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _enclose(opening: str, closing: str, parts: list[str], indent: str | None, depth: int) -> str:
    """Join encoded members between brackets, one per line when indenting.

    Args:
        opening: ``{`` or ``[``.
        closing: ``}`` or ``]``.
        parts: The encoded members.
        indent: ``None`` for compact output, else the indent unit.
        depth: The nesting level of the container.

    Returns:
        The container's JSON text; ``{}`` or ``[]`` when empty.
    """
    if not parts:
        return opening + closing
    if indent is None:
        return opening + ",".join(parts) + closing
    inner = "\n" + indent * (depth + 1)
    return opening + inner + ("," + inner).join(parts) + "\n" + indent * depth + closing


def to_json(obj: object) -> str:
    r"""Print ``obj`` as ``kubectl get -o json`` does.

    kubectl's ``JSONPrinter`` uses Go's ``json.MarshalIndent(obj, "", "    ")`` and adds a
    newline: 4-space indentation, object keys sorted, non-ASCII text as UTF-8, HTML-safe
    escapes (``<`` ``>`` ``&`` as ``\u003c`` ``\u003e`` ``\u0026``, U+2028/U+2029 as
    ``\u2028``/``\u2029``), and Go's number format (``1.0`` prints ``1``, ``1e21`` prints
    ``1e+21``).

    Args:
        obj: JSON-like data (mappings with string keys, lists or tuples, str, int, float, bool,
            ``None``), typically a decoded object or :func:`list_object`.

    Returns:
        The JSON text with a trailing newline.

    Raises:
        TypeError: ``obj`` holds a value or key JSON cannot represent.
        ValueError: ``obj`` holds a NaN or infinite float.
    """
    return _marshal(obj, "    ") + "\n"


def list_object(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Wrap objects in the ``List`` kubectl prints when ``get`` returns several of them.

    Args:
        items: The objects, in the order to print them.

    Returns:
        ``{"apiVersion": "v1", "items": [...], "kind": "List",
        "metadata": {"resourceVersion": ""}}``.
    """
    return {
        "apiVersion": "v1",
        "items": list(items),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


# --- YAML --------------------------------------------------------------------------------------

_STR_TAG = "tag:yaml.org,2002:str"
# go-yaml v2's emitter folds long plain and quoted strings at 80 columns, and kubectl
# (sigs.k8s.io/yaml) keeps that default: `kubectl get -o yaml` wraps long values.
_YAML_WIDTH = 80
_TAG = "tag:yaml.org,2002:"
_GO_YAML_BOOLS = (
    "y Y yes Yes YES true True TRUE on On ON n N no No NO false False FALSE off Off OFF"
)
_GO_YAML_WORDS = {
    **dict.fromkeys(_GO_YAML_BOOLS.split(), "bool"),
    **dict.fromkeys(["", "~", "null", "Null", "NULL"], "null"),
    **dict.fromkeys(
        ".nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF".split(), "float"
    ),
}
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_GO_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_GO_YAML_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})"
    r"| ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?)?"
)
_GO_YAML_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")


def _go_int(text: str) -> int | None:
    """Read an integer as Go's ``strconv.ParseInt(text, 0, 64)``, or ``ParseUint``, does.

    Args:
        text: E.g. ``"42"``, ``"-0x1F"``, ``"0o17"``, ``"0755"`` (octal) or ``"0b101"``.

    Returns:
        The value, or ``None`` when Go would not read it as a 64-bit integer.
    """
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    prefix = digits[:2].lower()
    if prefix in ("0x", "0b", "0o"):
        value = int(digits[2:], {"0x": 16, "0b": 2, "0o": 8}[prefix])
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits, 8)
    else:
        value = int(digits)
    if sign == "-":
        return -value if value <= 2**63 else None
    return value if value < (2**63 if sign else 2**64) else None


def _go_yaml_tag(value: str) -> str:
    """The tag go-yaml v2's ``resolve`` gives ``value`` written as a plain scalar.

    YAML 1.1 booleans (``y``, ``yes``, ``on``, ...), nulls (``""``, ``~``, ``null``), ints as
    ``strconv`` reads them (``0x1F``, ``0o17``, ``1_000``), floats (``1e3``, ``.5``,
    ``.inf``) and timestamps (``2026-11-23``, ``2026-1-2T3:04:05Z``) are not strings. The
    words are only looked up for a first character go-yaml's table flags, so ``<<`` stays a
    string.

    Args:
        value: The scalar's text.

    Returns:
        The full tag, e.g. ``tag:yaml.org,2002:str``.
    """
    word = _GO_YAML_WORDS.get(value)
    if word is not None:
        return _TAG + word
    first = value[:1]
    if first == "." and _GO_YAML_FLOAT.fullmatch(value) and math.isfinite(float(value)):
        return _TAG + "float"
    if first and first in "+-0123456789":
        stamp = _GO_YAML_TIMESTAMP.fullmatch(value)
        if stamp is not None:
            year, month, day, *clock = (int(g) for g in stamp.groups() if g is not None)
            hour, minute, second = clock or (0, 0, 0)
            try:
                datetime(year, month, day, hour, minute, second)
            except ValueError:
                pass
            else:
                return _TAG + "timestamp"
        plain = value.replace("_", "")
        if _go_int(plain) is not None:
            return _TAG + "int"
        if _GO_YAML_FLOAT.fullmatch(plain) and math.isfinite(float(plain)):
            return _TAG + "float"
    return _STR_TAG


_YAML_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_YAML_ALWAYS_ESCAPED = frozenset('"\\\r\n\x85\u2028\u2029\ufeff')
_YAML_ESCAPES = {
    "\0": "0",
    "\a": "a",
    "\b": "b",
    "\t": "t",
    "\n": "n",
    "\v": "v",
    "\f": "f",
    "\r": "r",
    "\x1b": "e",
    '"': '"',
    "\\": "\\",
    "\x85": "N",
    "\xa0": "_",
    "\u2028": "L",
    "\u2029": "P",
}
# What go-yaml's analyzer treats as special though PyYAML's does not: such strings are
# double-quoted (and these characters escaped) by go-yaml.
_GO_YAML_SPECIAL = re.compile("[\x85\ufffe\uffff\U00010000-\U0010ffff]")


def _go_yaml_printable(char: str) -> bool:
    """Whether go-yaml writes ``char`` as is (its ``is_printable``).

    Args:
        char: One character.

    Returns:
        ``True`` for newline, printable ASCII, U+00A0-U+D7FF and U+E000-U+FFFD but U+FEFF.
    """
    return (
        char == "\n"
        or " " <= char <= "~"
        or "\xa0" <= char <= "\ud7ff"
        or ("\ue000" <= char <= "\ufffd" and char != "\ufeff")
    )


def _yaml_escape(char: str) -> str:
    r"""Escape one character inside a double-quoted YAML scalar, as libyaml does.

    Args:
        char: One character.

    Returns:
        E.g. ``\n``, ``\L``, ``\x7F``, ``\uFEFF`` or ``\U0001F600``.
    """
    name = _YAML_ESCAPES.get(char)
    if name is not None:
        return "\\" + name
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _go_yaml_key_less(a: str, b: str) -> bool:
    """Order two mapping keys as go-yaml's ``keyList.Less`` does.

    Runs of digits compare by value (``a9`` before ``a10``), and a letter sorts after any
    other character (``a_b`` before ``aB``); otherwise characters compare by code point.

    Args:
        a: A key.
        b: Another key.

    Returns:
        Whether ``a`` sorts before ``b``.
    """
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        x_letter, y_letter = x.isalpha(), y.isalpha()
        if x_letter and y_letter:
            return x < y
        if x_letter or y_letter:
            return y_letter
        a_num = b_num = 0
        if "0" in (x, y):
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    a_num = b_num = 1  # zeros inside a number: compare what follows
                    break
                j -= 1
        a_end = i
        while a_end < len(a) and a[a_end].isdecimal():
            a_num = a_num * 10 + ord(a[a_end]) - ord("0")
            a_end += 1
        b_end = i
        while b_end < len(b) and b[b_end].isdecimal():
            b_num = b_num * 10 + ord(b[b_end]) - ord("0")
            b_end += 1
        if a_num != b_num:
            return a_num < b_num
        if a_end != b_end:
            return a_end < b_end
        return x < y
    return len(a) < len(b)


def _go_yaml_key_order(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
    """``cmp`` of two mapping items by their keys, in go-yaml's order.

    Args:
        a: A ``(key, value)`` pair.
        b: Another pair.

    Returns:
        -1, 0 or 1.
    """
    x, y = str(a[0]), str(b[0])
    return -1 if _go_yaml_key_less(x, y) else int(_go_yaml_key_less(y, x))


class _KubectlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper tuned to write what go-yaml v2 (``sigs.k8s.io/yaml``) writes."""

    def ignore_aliases(self, data: Any) -> bool:
        """Never emit anchors and aliases: go-yaml writes shared values out in full.

        Args:
            data: The value about to be represented.

        Returns:
            Always ``True``.
        """
        return True

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """Resolve plain scalars as go-yaml v2 does, so the emitter quotes what go-yaml quotes.

        Args:
            kind: The node class.
            value: The scalar's text (for scalars).
            implicit: ``(plain, quoted)`` flags of the resolution asked for.

        Returns:
            The tag a reader gives the node.
        """
        if kind is yaml.ScalarNode and implicit[0]:
            return _go_yaml_tag(value)
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

    def check_simple_key(self) -> bool:
        """Write an empty key as ``"": v`` like libyaml, not as PyYAML's ``? ""``.

        Returns:
            Whether the current node can be written as a simple ``key: value`` key.
        """
        if isinstance(self.event, yaml.ScalarEvent) and self.event.value == "":
            return True
        return super().check_simple_key()

    def write_single_quoted(self, text: str, split: bool = True) -> None:
        """Write a single-quoted scalar as libyaml (go-yaml) does.

        Line breaks inside are written as YAML folds them back (a newline as an empty line,
        U+2028 and its kin as is), the next line indented; unlike PyYAML, nothing is indented
        between a trailing break and the closing quote. A long string folds at a single space
        once the line is past the width.

        Args:
            text: The scalar's value.
            split: Whether folding is allowed (not in a simple key).
        """
        self.write_indicator("'", True)
        spaces = breaks = False
        last = len(text) - 1
        for i, char in enumerate(text):
            if char == " ":
                if (
                    split
                    and not spaces
                    and self.column > self.best_width
                    and 0 < i < last
                    and text[i + 1] != " "
                ):
                    self.write_indent()
                else:
                    self._write_raw(" ")
                spaces = True
            elif char in _YAML_BREAKS:
                if not breaks and char == "\n":
                    self.write_line_break()
                self.write_line_break(None if char == "\n" else char)
                breaks = True
            else:
                if breaks:
                    self.write_indent()
                self._write_raw("''" if char == "'" else char)
                self.indention = False
                spaces = breaks = False
        self.write_indicator("'", False)

    def write_double_quoted(self, text: str, split: bool = True) -> None:
        r"""Write a double-quoted scalar as libyaml (go-yaml) does.

        Escapes what go-yaml's ``is_printable`` rejects (C0/C1 controls, DEL, characters
        beyond U+FFFF, U+FFFE/U+FFFF), line breaks, the BOM, ``"`` and ``\``. A long string
        is folded only at a space, once the line is past the width; PyYAML also folds right
        after an escape, which go-yaml never does.

        Args:
            text: The scalar's value.
            split: Whether folding is allowed (not in a simple key).
        """
        self.write_indicator('"', True)
        after_space = False
        last = len(text) - 1
        for i, char in enumerate(text):
            if char in _YAML_ALWAYS_ESCAPED or not _go_yaml_printable(char):
                self._write_raw(_yaml_escape(char))
                after_space = False
            elif char == " ":
                if split and not after_space and self.column > self.best_width and 0 < i < last:
                    self.write_indent()
                    if text[i + 1] == " ":
                        self._write_raw("\\")
                else:
                    self._write_raw(" ")
                after_space = True
            else:
                self._write_raw(char)
                after_space = False
        self.write_indicator('"', False)

    def _write_raw(self, data: str) -> None:
        """Write ``data`` on the current line.

        Args:
            data: Text without line breaks.
        """
        self.column += len(data)
        self.stream.write(data.encode(self.encoding) if self.encoding else data)


def _represent_str(dumper: _KubectlDumper, data: str) -> yaml.ScalarNode:
    """Choose a string's style as go-yaml v2 does.

    Multi-line strings are literal blocks (``|``); strings that would read back as something
    else (``"true"``, ``"123"``, timestamps, ``""``) are double-quoted; the rest are plain,
    which the emitter turns into single quotes where plain is not allowed.

    Args:
        dumper: The dumper.
        data: The string.

    Returns:
        The scalar node.
    """
    style: str | None = None
    if _GO_YAML_SPECIAL.search(data):
        style = '"'
    elif "\n" in data:
        style = "|"
    elif _go_yaml_tag(data) != _STR_TAG or _GO_YAML_BASE60.fullmatch(data):
        style = '"'
    return dumper.represent_scalar(_STR_TAG, data, style=style)


def _represent_float(dumper: _KubectlDumper, data: float) -> yaml.ScalarNode:
    """Write a float as kubectl does: through JSON, then go-yaml.

    ``sigs.k8s.io/yaml`` encodes the object as JSON and reads that back with go-yaml, so a
    float JSON writes without a fraction or exponent comes back as an int (``3.0`` prints
    ``3``, ``1e6`` prints ``1000000``) and any other as a float, which go-yaml writes in
    ``strconv``'s shortest ``%g`` (``0.5``, ``1.5e-07``, ``1.234567895e+08``).

    Args:
        dumper: The dumper.
        data: The float.

    Returns:
        A plain scalar.

    Raises:
        ValueError: NaN or infinite (kubectl's JSON step rejects them).
    """
    json_text = _go_float(data, for_json=True)
    if _INT.fullmatch(json_text) and -(2**63) <= int(json_text) < 2**63:
        text = str(int(json_text))
    else:
        text = _go_float(data)
    return dumper.represent_scalar(_go_yaml_tag(text), text)


def _represent_int(dumper: _KubectlDumper, data: int) -> yaml.ScalarNode:
    """Write an int in decimal, as a plain scalar.

    Args:
        dumper: The dumper.
        data: The int (``bool`` has its own representer).

    Returns:
        The scalar node.
    """
    text = int.__repr__(data)
    return dumper.represent_scalar(_go_yaml_tag(text), text)


def _represent_tuple(dumper: _KubectlDumper, data: tuple[Any, ...]) -> yaml.SequenceNode:
    """Write a tuple as a sequence, as JSON would.

    Args:
        dumper: The dumper.
        data: The tuple.

    Returns:
        The sequence node.
    """
    return dumper.represent_list(data)


def _represent_mapping(dumper: _KubectlDumper, data: dict[Any, Any]) -> yaml.MappingNode:
    """Write a mapping with its keys in go-yaml's order.

    Args:
        dumper: The dumper.
        data: The mapping.

    Returns:
        The mapping node.
    """
    items = sorted(data.items(), key=cmp_to_key(_go_yaml_key_order))
    return dumper.represent_mapping("tag:yaml.org,2002:map", items)


_KubectlDumper.add_representer(dict, _represent_mapping)
_KubectlDumper.add_multi_representer(dict, _represent_mapping)
_KubectlDumper.add_representer(str, _represent_str)
_KubectlDumper.add_representer(float, _represent_float)
_KubectlDumper.add_representer(int, _represent_int)
_KubectlDumper.add_representer(tuple, _represent_tuple)


def to_yaml(obj: object) -> str:
    """Print ``obj`` as ``kubectl get -o yaml`` does.

    kubectl's ``YAMLPrinter`` goes through ``sigs.k8s.io/yaml``: JSON, read back and written
    by go-yaml v2. This drives PyYAML's safe dumper to the same bytes: block style, sequences
    not indented under their key, no anchors or aliases, keys in go-yaml's order (runs of
    digits by value: ``node9`` before ``node10``), multi-line strings as literal blocks,
    double quotes around strings go-yaml would read back as another type (``"true"``,
    ``"8080"``, ``"2026-11-23T10:00:00Z"``, ``""``) or that hold characters it escapes
    (``"\U0001f600"``), single quotes where a plain scalar is not allowed (``'- x'``), whole
    floats as ints and other floats in Go's shortest form (``1.5e-07``), and long strings
    folded at 80 columns at the same spaces as go-yaml.

    Args:
        obj: JSON-like data, typically a decoded object or :func:`list_object`.

    Returns:
        The YAML document (no ``---`` header), with a trailing newline.

    Raises:
        yaml.representer.RepresenterError: ``obj`` holds a value PyYAML's safe dumper
            cannot represent.
        ValueError: ``obj`` holds a NaN or infinite float.
    """
    text = yaml.dump(
        obj,
        Dumper=_KubectlDumper,
        default_flow_style=False,
        sort_keys=False,  # _represent_mapping sorts as go-yaml does
        allow_unicode=True,
        width=_YAML_WIDTH,
    )
    if not isinstance(obj, Mapping | list | tuple) and text.endswith("\n...\n"):
        text = text[: -len("...\n")]  # PyYAML closes a bare scalar document; go-yaml does not
    return text


# --- JSONPath ----------------------------------------------------------------------------------


class JSONPathError(ValueError):
    """A JSONPath template that does not parse, or that fails on the given data.

    Evaluation errors carry client-go's message, e.g. ``"status is not found"`` or
    ``"array index out of bounds: index 3, length 2"``. Parse errors name the template and
    the 0-based position where parsing stopped, and set :attr:`template` and
    :attr:`position`.

    Attributes:
        template: The template that failed to parse (``None`` for evaluation errors).
        position: The 0-based offset into :attr:`template` (``None`` for evaluation errors).
    """

    def __init__(
        self, message: str, *, template: str | None = None, position: int | None = None
    ) -> None:
        super().__init__(message)
        self.template = template
        self.position = position


@dataclass(frozen=True)
class _Field:
    """``.name``: the value under a key of each mapping."""

    name: str


@dataclass(frozen=True)
class _Wildcard:
    """``.*``: every member of each mapping, list or string."""


@dataclass(frozen=True)
class _Recursive:
    """``..``: each container and, recursively, every container under it."""


@dataclass(frozen=True)
class _Index:
    """``[start:end:step]``, ``[N]`` or ``[*]``; ``None`` for a bound not written."""

    start: int | None
    end: int | None
    end_derived: bool  # [N] is [N:N+1]; client-go then wraps an end of 0 for [-1]
    step: int | None


@dataclass(frozen=True)
class _Union:
    """``[a,b]``: the results of each branch, one after the other."""

    branches: tuple[tuple[_Node, ...], ...]


@dataclass(frozen=True)
class _Filter:
    """``[?(left op right)]``, or ``[?(left)]`` (``op`` is ``"exists"``)."""

    left: tuple[_Node, ...]
    op: str
    right: tuple[_Node, ...]


@dataclass(frozen=True)
class _Text:
    """``"..."`` or ``'...'``: a literal that replaces the current values."""

    value: str


@dataclass(frozen=True)
class _Constant:
    """A number or ``true``/``false``: one copy of the value per current value."""

    value: int | float | bool


@dataclass(frozen=True)
class _Identifier:
    """A bare word: ``range`` and ``end``; anything else fails when evaluated."""

    name: str


_Node: TypeAlias = (
    _Field | _Wildcard | _Recursive | _Index | _Union | _Filter | _Text | _Constant | _Identifier
)
_Segment: TypeAlias = str | tuple[_Node, ...]  # plain text, or the nodes of one {action}

_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_SLICE = re.compile(r"(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?")
_DICT_KEY = re.compile(r"'([^']*)'")
_COMPARISON = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)", re.DOTALL)
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}


def _is_alphanumeric(char: str) -> bool:
    """Whether ``char`` is a letter, a decimal digit or ``_`` (client-go's ``isAlphaNumeric``).

    Args:
        char: One character.

    Returns:
        ``True`` for a letter, digit or underscore.
    """
    return char == "_" or char.isalpha() or char.isdecimal()


def _go_rune(char: str) -> str:
    """Format a character as Go's ``%#U`` does.

    Args:
        char: One character.

    Returns:
        E.g. ``U+0023 '#'``, or ``U+0009`` for a character that is not printable.
    """
    code = f"U+{ord(char):04X}"
    return f"{code} '{char}'" if char.isprintable() else code


def _unquote(literal: str) -> str:
    """Decode a quoted string literal as client-go's ``UnquoteExtend`` (``strconv``) does.

    Args:
        literal: The literal including its quotes, ``"..."`` or ``'...'``.

    Returns:
        The decoded text.

    Raises:
        ValueError: An invalid escape, or an unescaped quote inside the literal.
    """
    quote, body = literal[0], literal[1:-1]
    if "\\" not in body and quote not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == quote:
            raise ValueError("invalid syntax")
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError("invalid syntax")
        escape = body[i + 1]
        i += 2
        if escape in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[escape])
        elif escape in "'\"":
            if escape != quote:
                raise ValueError("invalid syntax")
            out.append(escape)
        elif escape in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[escape]
            digits = body[i : i + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError("invalid syntax")
            code = int(digits, 16)
            if escape != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise ValueError("invalid syntax")
            out.append(chr(code))
            i += width
        elif escape in "01234567":
            digits = body[i - 1 : i + 2]
            if len(digits) != 3 or any(d not in "01234567" for d in digits):
                raise ValueError("invalid syntax")
            code = int(digits, 8)
            if code > 0xFF:
                raise ValueError("invalid syntax")
            out.append(chr(code))
            i += 2
        else:
            raise ValueError("invalid syntax")
    return "".join(out)


class _Parser:
    """A recursive-descent reading of client-go's JSONPath grammar (``jsonpath/parser.go``).

    Attributes:
        text: What is being parsed (the template, or a sub-action wrapped in braces).
        template: The whole template, for error messages.
        origin: Where ``text[0]`` sits in ``template`` (positions in errors are absolute).
    """

    def __init__(self, text: str, template: str, origin: int = 0) -> None:
        self.text = text
        self.template = template
        self.origin = origin

    def fail(self, message: str, pos: int) -> JSONPathError:
        """Build the syntax error for ``message`` at ``pos`` of :attr:`text`.

        Args:
            message: client-go's wording, e.g. ``"unclosed action"``.
            pos: The offset into :attr:`text`.

        Returns:
            The error to raise.
        """
        position = max(0, min(self.origin + pos, len(self.template)))
        return JSONPathError(
            f"error parsing jsonpath {self.template}, {message} (at position {position})",
            template=self.template,
            position=position,
        )

    def parse(self) -> tuple[_Segment, ...]:
        """Split :attr:`text` into plain text and ``{...}`` actions.

        Returns:
            The segments in order.

        Raises:
            JSONPathError: A syntax error.
        """
        segments: list[_Segment] = []
        pos = 0
        while pos < len(self.text):
            brace = self.text.find("{", pos)
            if brace < 0:
                segments.append(self.text[pos:])
                break
            if brace > pos:
                segments.append(self.text[pos:brace])
            nodes, pos = self.action(brace + 1)
            segments.append(nodes)
        return tuple(segments)

    def sub_action(self, body: str, at: int) -> tuple[_Node, ...]:
        """Parse ``body`` as the inside of one action, as client-go's ``parseAction`` does.

        Args:
            body: The action's text without braces.
            at: Where ``body[0]`` sits in :attr:`text` (``body`` may be built, e.g. ``[x]``).

        Returns:
            The nodes of the first action of ``{body}``.

        Raises:
            JSONPathError: A syntax error.
        """
        inner = _Parser("{" + body + "}", self.template, self.origin + at - 1)
        first = inner.parse()[0]
        assert not isinstance(first, str)
        return first

    def action(self, pos: int) -> tuple[tuple[_Node, ...], int]:
        """Parse the nodes of an action up to its closing brace.

        Args:
            pos: The offset just after the opening ``{``.

        Returns:
            The nodes, and the offset just after the closing ``}``.

        Raises:
            JSONPathError: A syntax error.
        """
        text = self.text
        nodes: list[_Node] = []
        while True:
            if text.startswith("}", pos):
                return tuple(nodes), pos + 1
            if text.startswith("[?(", pos):
                filter_node, pos = self.filter(pos + 3)
                nodes.append(filter_node)
                continue
            if text.startswith("..", pos):
                if nodes and isinstance(nodes[-1], _Recursive):
                    raise self.fail("invalid multiple recursive descent", pos)
                nodes.append(_Recursive())
                pos += 2
                if pos < len(text) and _is_alphanumeric(text[pos]):
                    field, pos = self.field(pos)
                    nodes.append(field)
                continue
            if pos >= len(text) or text[pos] in "\r\n":
                raise self.fail("unclosed action", pos)
            char = text[pos]
            if char in " @$":
                pos += 1
            elif char == "[":
                array, pos = self.array(pos)
                nodes.extend(array)
            elif char in "\"'":
                literal, pos = self.quoted(pos)
                nodes.append(literal)
            elif char == ".":
                field, pos = self.field(pos + 1)
                nodes.append(field)
            elif char in "+-" or char.isdecimal():
                number, pos = self.number(pos)
                nodes.append(number)
            elif _is_alphanumeric(char):
                end = pos
                while end < len(text) and text[end] not in _TERMINATORS:
                    end += 1
                word = text[pos:end]
                nodes.append(
                    _Constant(word == "true") if word in ("true", "false") else _Identifier(word)
                )
                pos = end
            else:
                raise self.fail(f"unrecognized character in action: {_go_rune(char)}", pos)

    def field(self, pos: int) -> tuple[_Node, int]:
        r"""Parse a field name up to the next unescaped terminator.

        A backslash escapes the next character (``labels.app\.kubernetes\.io/name``); all
        backslashes are then dropped, as client-go does.

        Args:
            pos: The offset just after the ``.``.

        Returns:
            A field (or the ``*`` wildcard) and the offset after it.
        """
        text = self.text
        end = pos
        while end < len(text):
            if text[end] == "\\":
                end = min(end + 2, len(text))
            elif text[end] in _TERMINATORS:
                break
            else:
                end += 1
        raw = text[pos:end]
        return (_Wildcard() if raw == "*" else _Field(raw.replace("\\", ""))), end

    def number(self, pos: int) -> tuple[_Node, int]:
        """Parse an int or float literal.

        Args:
            pos: The offset of the sign or first digit.

        Returns:
            The constant and the offset after it.

        Raises:
            JSONPathError: Not a number (``cannot parse number``).
        """
        text = self.text
        end = pos + 1 if text[pos] in "+-" else pos
        while end < len(text) and (text[end] == "." or text[end].isdecimal()):
            end += 1
        literal = text[pos:end]
        if _INT.fullmatch(literal):
            return _Constant(int(literal)), end
        if _FLOAT.fullmatch(literal):
            return _Constant(float(literal)), end
        raise self.fail(f"cannot parse number {literal}", pos)

    def quoted(self, pos: int) -> tuple[_Node, int]:
        r"""Parse a quoted string literal such as ``"\n"`` or ``'Ready'``.

        As in client-go, the literal ends at the first quote not preceded by a backslash.

        Args:
            pos: The offset of the opening quote.

        Returns:
            The text node and the offset after the closing quote.

        Raises:
            JSONPathError: Unterminated, or an invalid escape.
        """
        text, quote = self.text, self.text[pos]
        end = pos + 1
        while True:
            if end >= len(text) or text[end] == "\n":
                raise self.fail("unterminated quoted string", end)
            end += 1
            if text[end - 1] == quote and text[end - 2] != "\\":
                break
        literal = text[pos:end]
        try:
            return _Text(_unquote(literal)), end
        except ValueError as exc:
            raise self.fail(f"unquote string {literal} error {exc}", pos) from None

    def array(self, pos: int) -> tuple[tuple[_Node, ...], int]:
        """Parse ``[...]``: an index, a slice, ``*``, ``'key'`` or a union ``a,b``.

        Args:
            pos: The offset of ``[``.

        Returns:
            The nodes (a ``['key']`` may give several) and the offset after ``]``.

        Raises:
            JSONPathError: Unterminated or invalid.
        """
        text = self.text
        end = pos + 1
        while end < len(text) and text[end] not in "]\n":
            end += 1
        if end >= len(text) or text[end] != "]":
            raise self.fail("unterminated array", end)
        inside = text[pos + 1 : end]
        after = end + 1
        if inside == "*":
            inside = ":"
        if "," in inside:
            branches = []
            start = pos + 1
            for part in inside.split(","):
                trimmed = part.strip(" ")
                offset = start + (len(part) - len(part.lstrip(" ")))
                branches.append(self.sub_action(f"[{trimmed}]", offset - 1))
                start += len(part) + 1
            return (_Union(tuple(branches)),), after
        key = _DICT_KEY.fullmatch(inside)
        if key is not None:
            return self.sub_action("." + key.group(1), pos + 1), after
        slice_match = _SLICE.fullmatch(inside)
        if slice_match is None:
            raise self.fail(f"invalid array index {inside}", pos + 1)
        bounds: list[int | None] = []
        for i, group in enumerate(slice_match.groups()):
            raw = (group or "")[1:] if i > 0 else (group or "")
            if not group or (i > 0 and raw == ""):
                bounds.append(None)
            elif _INT.fullmatch(raw):
                bounds.append(int(raw))
            else:
                raise self.fail(f"array index {raw} is not a number", pos + 1)
        start_bound, end_bound, step = bounds
        derived = not slice_match.group(2)
        if derived:
            end_bound = (start_bound or 0) + 1
        return (_Index(start_bound, end_bound, derived, step),), after

    def filter(self, pos: int) -> tuple[_Node, int]:
        """Parse ``[?(...)]`` after its ``[?(``.

        Args:
            pos: The offset just after ``[?(``.

        Returns:
            The filter and the offset after ``)]``.

        Raises:
            JSONPathError: Unterminated or invalid.
        """
        text = self.text
        start = end = pos
        opened = closed = False
        pair = ""
        while True:
            if end >= len(text) or text[end] == "\n":
                raise self.fail("unterminated filter", end)
            char = text[end]
            end += 1
            if char in "\"'":
                if not opened:
                    opened, pair = True, char
                elif char == pair and text[end - 2] != "\\":
                    closed = True
            elif char == ")" and opened == closed:
                break
        if end >= len(text) or text[end] != "]":
            raise self.fail("unclosed array expect ]", end)
        body = text[start : end - 1]
        comparison = _COMPARISON.fullmatch(body)
        if comparison is None:
            return _Filter(self.sub_action(body, start), "exists", ()), end + 1
        left = self.sub_action(comparison.group(1), start)
        right = self.sub_action(comparison.group(3), start + comparison.start(3))
        return _Filter(left, comparison.group(2), right), end + 1


@lru_cache(maxsize=64)
def _parse_template(template: str) -> tuple[_Segment, ...]:
    r"""Parse a JSONPath template (cached: the CLI evaluates one template per object).

    Args:
        template: E.g. ``{range .items[*]}{.metadata.name}{"\n"}{end}``.

    Returns:
        Its segments.

    Raises:
        JSONPathError: A syntax error.
    """
    return _Parser(template, template).parse()


def _go_type(value: object) -> str:
    """Name the Go type ``value`` has once kubectl decoded it into ``interface{}``.

    Args:
        value: JSON-like data.

    Returns:
        E.g. ``map[string]interface {}``, ``[]interface {}``, ``string``, ``int64``.
    """
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _go_value(value: object) -> str:
    """Format ``value`` as Go's ``%v`` does (for error messages).

    Args:
        value: JSON-like data.

    Returns:
        E.g. ``<nil>``, ``map[a:1 b:[x y]]``, ``true``.
    """
    if value is None:
        return "<nil>"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{_go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return _text(value)


def _text(value: object) -> str:
    """Print one result as client-go's ``PrintResults`` does.

    Args:
        value: A result.

    Returns:
        Maps and lists as compact JSON (``json.Marshal``: keys sorted, HTML-safe escapes),
        strings as is, ``true``/``false``, ``null`` for ``None``, numbers in Go's format.
    """
    if isinstance(value, Mapping | list | tuple):
        return _marshal(value, None)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _comparison_kind(value: object) -> str:
    """Classify a filter operand as Go's ``text/template`` comparisons do.

    Args:
        value: The operand.

    Returns:
        ``"bool"``, ``"int"``, ``"float"`` or ``"string"``.

    Raises:
        JSONPathError: Any other type (``invalid type for comparison``).
    """
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise JSONPathError("invalid type for comparison")


def _equal(left: Any, right: Any) -> bool:
    """Go template ``eq``: same kind required.

    Args:
        left: The left operand.
        right: The right operand.

    Returns:
        Whether they are equal.

    Raises:
        JSONPathError: Operands of different or non-basic kinds.
    """
    if _comparison_kind(left) != _comparison_kind(right):
        raise JSONPathError("incompatible types for comparison")
    return bool(left == right)


def _less(left: Any, right: Any) -> bool:
    """Go template ``lt``: same kind required, bools not ordered.

    Args:
        left: The left operand.
        right: The right operand.

    Returns:
        Whether ``left < right``.

    Raises:
        JSONPathError: Operands of different or non-basic kinds, or bools.
    """
    kind = _comparison_kind(left)
    if kind != _comparison_kind(right):
        raise JSONPathError("incompatible types for comparison")
    if kind == "bool":
        raise JSONPathError("invalid type for comparison")
    return bool(left < right)


def _compare(op: str, left: Any, right: Any) -> bool:
    """Apply a filter operator.

    Args:
        op: One of ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=``.
        left: The left operand.
        right: The right operand.

    Returns:
        The comparison's truth.

    Raises:
        JSONPathError: An unknown operator or incomparable operands.
    """
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op == "<":
        return _less(left, right)
    if op == "<=":
        return _less(left, right) or _equal(left, right)
    if op == ">":
        return not (_less(left, right) or _equal(left, right))
    if op == ">=":
        return not _less(left, right)
    raise JSONPathError(f"unrecognized filter operator {op}")


def _members(value: object) -> list[Any]:
    """The members a wildcard or recursive descent visits.

    Args:
        value: A value.

    Returns:
        A mapping's values, a list's items, a string's UTF-8 bytes (as Go indexes strings),
        or nothing.
    """
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str):
        return list(value.encode("utf-8", "surrogatepass"))
    return []


class _Evaluator:
    """Runs parsed templates over data as client-go's ``JSONPath.FindResults`` does.

    Attributes:
        allow_missing_keys: A missing key yields nothing instead of ``... is not found``.
        depth: How many ``{range}`` blocks enclose the segment being run.
        range_started: The action just walked contained ``range``.
        range_ended: The action just walked contained ``end``.
    """

    def __init__(self, allow_missing_keys: bool) -> None:
        self.allow_missing_keys = allow_missing_keys
        self.depth = 0
        self.range_started = False
        self.range_ended = False

    def run(
        self, segments: tuple[_Segment, ...], start: int, data: object
    ) -> tuple[list[list[Any]], int | None]:
        """Evaluate ``segments[start:]`` against ``data``.

        Args:
            segments: The parsed template.
            start: The first segment to run.
            data: The current object.

        Returns:
            The results of each text or action, and the index of the ``{end}`` that stopped
            the run (``None`` when the run reached the end of the template).

        Raises:
            JSONPathError: The data does not fit the template.
        """
        results: list[list[Any]] = []
        i = start
        while i < len(segments):
            segment = segments[i]
            if isinstance(segment, str):
                results.append([segment])
                i += 1
                continue
            self.range_started = self.range_ended = False
            values = self.walk([data], segment)
            if self.range_ended:
                return results, i
            if not self.range_started:
                results.append(values)
                i += 1
                continue
            self.depth += 1
            try:
                end_at: int | None = None
                if values:
                    for value in values:
                        body, end_at = self.run(segments, i + 1, value)
                        results.extend(body)
                else:
                    # client-go runs the body once on nil to find its {end}, output dropped
                    _, end_at = self.run(segments, i + 1, None)
            finally:
                self.depth -= 1
            i = (i if end_at is None else end_at) + 1
        return results, None

    def walk(self, values: list[Any], nodes: Sequence[_Node]) -> list[Any]:
        """Apply ``nodes`` one after the other, starting from ``values``.

        Args:
            values: The current values.
            nodes: The nodes of an action (or of a filter operand or union branch).

        Returns:
            The resulting values.

        Raises:
            JSONPathError: The data does not fit the path.
        """
        for node in nodes:
            values = self.step(values, node)
        return values

    def step(self, values: list[Any], node: _Node) -> list[Any]:
        """Apply one node.

        Args:
            values: The current values.
            node: The node.

        Returns:
            The resulting values.

        Raises:
            JSONPathError: The data does not fit the node.
        """
        if isinstance(node, _Field):
            return self.field(values, node.name)
        if isinstance(node, _Index):
            return self.index(values, node)
        if isinstance(node, _Filter):
            return self.filter(values, node)
        if isinstance(node, _Text):
            return [node.value]
        if isinstance(node, _Constant):
            return [node.value for _ in values]
        if isinstance(node, _Wildcard):
            return [member for value in values for member in _members(value)]
        if isinstance(node, _Recursive):
            return self.recursive(values)
        if isinstance(node, _Union):
            return [result for branch in node.branches for result in self.walk(values, branch)]
        if node.name == "range":
            self.range_started = True
            return values
        if node.name == "end":
            if self.depth == 0:
                raise JSONPathError("not in range, nothing to end")
            self.range_ended = True
            return []
        raise JSONPathError(f"unrecognized identifier {node.name}")

    def field(self, values: list[Any], name: str) -> list[Any]:
        """``.name`` on each value; values that are not mappings are skipped.

        Args:
            values: The current values.
            name: The key.

        Returns:
            The values found (``null`` values included).

        Raises:
            JSONPathError: No value had the key (``NAME is not found``), unless missing keys
                are allowed or there were no values to begin with.
        """
        if not values:
            return []
        found = [v[name] for v in values if isinstance(v, Mapping) and name in v]
        if not found and not self.allow_missing_keys:
            raise JSONPathError(f"{name} is not found")
        return found

    def index(self, values: list[Any], node: _Index) -> list[Any]:
        """``[N]``, ``[start:end:step]`` or ``[*]`` on each list; ``null`` values are skipped.

        Args:
            values: The current values.
            node: The bounds.

        Returns:
            The selected items.

        Raises:
            JSONPathError: A value is not a list, a bound is out of range, or the step is
                not positive.
        """
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list | tuple):
                raise JSONPathError(f"{_go_type(value)} is not array or slice")
            length = len(value)
            start = node.start if node.start is not None else 0
            if start < 0:
                start += length
            end = node.end if node.end is not None else length
            if end < 0 or (end == 0 and node.end_derived):
                end += length
            if end == start:
                return results  # client-go stops here, dropping the values after this one
            if start >= length or start < 0:
                raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
            if end > length or end < 0:
                raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
            if start > end:
                raise JSONPathError(f"starting index {start} is greater than ending index {end}")
            if node.step is not None and node.step <= 0:
                raise JSONPathError("step must be > 0")
            results.extend(value[start : end : node.step or 1])
        return results

    def filter(self, values: list[Any], node: _Filter) -> list[Any]:
        """``[?(...)]`` on each list.

        Args:
            values: The current values.
            node: The filter.

        Returns:
            The items that pass.

        Raises:
            JSONPathError: A value is not a list, an operand is missing a key (unless missing
                keys are allowed), yields several values, or cannot be compared.
        """
        results: list[Any] = []
        for value in values:
            if not isinstance(value, list | tuple):
                raise JSONPathError(
                    f"{_go_value(value)} is not array or slice and cannot be filtered"
                )
            for item in value:
                if node.op == "exists":
                    try:
                        present = bool(self.walk([item], node.left))
                    except JSONPathError:
                        present = False
                    if present:
                        results.append(item)
                    continue
                lefts = self.walk([item], node.left)
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = self.walk([item], node.right)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(node.op, lefts[0], rights[0]):
                    results.append(item)
        return results

    def recursive(self, values: list[Any]) -> list[Any]:
        """``..``: each value that has members, followed by the same for its members.

        Args:
            values: The current values.

        Returns:
            The containers, depth first (scalars are not included).
        """
        results: list[Any] = []
        for value in values:
            members = _members(value)
            if members:
                results.append(value)
                results.extend(self.recursive(members))
        return results


def jsonpath(template: str, obj: object, *, allow_missing_keys: bool = False) -> str:
    r"""Evaluate a kubectl JSONPath template over ``obj`` (``kubectl get -o jsonpath=...``).

    Follows ``k8s.io/client-go/util/jsonpath``:

    * Text outside braces is kept; each ``{...}`` action prints its results joined by one
      space: maps and lists as compact JSON (``json.Marshal``: keys sorted, HTML-safe
      escapes), strings raw, ``true``/``false``, ``null`` for ``None``, numbers as Go prints
      them (``1.5``, ``1e+06``).
    * Paths: ``{.a.b}``, ``{@}``/``{$}`` and ``{}`` (the current object), ``[N]`` (negative
      from the end), ``[start:end:step]``, ``[*]``, ``['key']``, unions ``[0,2]``, ``.*``,
      recursive descent ``..name``, escaped dots in keys (``{.metadata.labels.a\.b/c}``).
    * Filters ``[?(@.type=="Ready")]`` with ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=`` (both
      sides of the same type: string, int, float or bool), and ``[?(@.x)]`` (key present).
    * ``{range ...}...{end}`` blocks, nestable; string literals ``{"\n"}``, ``{'\t'}`` with
      Go escapes; ``true``/``false`` and numbers as literals.

    Quirks kept from client-go: a ``[*]`` over an empty list stops the evaluation of that
    step for the remaining values; an empty ``{range}`` runs its body once on ``null`` to find
    its ``{end}`` (so with ``allow_missing_keys=False`` a field read there fails); a filter
    whose operand misses a key fails unless missing keys are allowed.

    Args:
        template: The template, braces included (see :func:`relaxed_jsonpath` for
            ``.a.b``-style expressions).
        obj: JSON-like data, typically a decoded object or :func:`list_object`.
        allow_missing_keys: Let a missing key yield nothing instead of failing. client-go's
            default is ``False``; ``kubectl get -o jsonpath`` passes
            ``--allow-missing-template-keys``, which defaults to ``True``.

    Returns:
        The printed text (no newline is added).

    Raises:
        JSONPathError: The template does not parse (the message names the template and the
            position), or does not fit ``obj``: ``"NAME is not found"``, ``"array index out
            of bounds: index 3, length 2"``, ``"incompatible types for comparison"``, ...
        TypeError: A map or list to print holds a value JSON cannot represent.
    """
    segments = _parse_template(template)
    results, _ = _Evaluator(allow_missing_keys).run(segments, 0, obj)
    try:
        return "".join(" ".join(_text(v) for v in values) for values in results)
    except ValueError as exc:  # a NaN or infinite float inside a map or list
        raise JSONPathError(str(exc)) from None


_RELAXED = re.compile(r"\{\.?([^{}]+)\}|\.?([^{}]+)")


def relaxed_jsonpath(expr: str) -> str:
    """Complete a single-path expression as kubectl's ``RelaxedJSONPathExpression`` does.

    ``metadata.name``, ``.metadata.name``, ``{metadata.name}`` and ``{.metadata.name}`` all
    become ``{.metadata.name}``; ``""`` stays ``""``. kubectl applies this to
    ``-o custom-columns``, ``--sort-by`` and ``wait --for=jsonpath=``; ``-o jsonpath=`` takes
    its template as is (without braces it is plain text), and a template with several actions
    such as ``{range .items[*]}...{end}`` is rejected here.

    Args:
        expr: The expression.

    Returns:
        The braced template.

    Raises:
        JSONPathError: ``expr`` holds braces other than one enclosing pair.
    """
    if not expr:
        return expr
    match = _RELAXED.fullmatch(expr)
    if match is None:
        raise JSONPathError(
            "unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
            "'{name1.name2}' or '{.name1.name2}'"
        )
    return "{." + (match.group(1) or match.group(2)) + "}"
