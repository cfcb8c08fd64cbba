"""Label-selector requirements over labels and over ClusterProfile properties. Pure.

Kubernetes' selector semantics (``k8s.io/apimachinery/pkg/labels``) in both of its forms:
the text a person types (``env=prod,region in (eu-west-1, eu-central-1),!legacy``) and the
structured ``LabelSelector`` an object stores (``matchLabels`` + ``matchExpressions``).
A placement applies the same requirements to a profile's ``status.properties`` (name to
value) as to its labels, so ``region in (eu-west-1, eu-central-1)`` reads the same in both.

As in Kubernetes: ``!=`` and ``notin`` also match when the key is absent; ``in`` and ``=``
need the key; an empty selector matches everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OPERATORS",
    "Operator",
    "Requirement",
    "SelectorError",
    "format_selector",
    "from_label_selector",
    "matches",
    "parse_selector",
    "to_label_selector",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
#: The operators of a ``matchExpressions`` entry (``metav1.LabelSelectorOperator``).
OPERATORS: tuple[Operator, ...] = ("In", "NotIn", "Exists", "DoesNotExist")
_TEXT_OPERATORS: dict[str, Operator] = {"in": "In", "notin": "NotIn"}
# A key or value in the text form: anything but separators, spaces, operators and parentheses.
_TOKEN = re.compile(r"^[^\s,()=!]+$")
_SET_TERM = re.compile(r"^(?P<key>[^\s,()=!]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


class SelectorError(ValueError):
    """A selector is malformed; the message quotes the offending term and says where it is."""


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """One requirement: ``key`` with an operator and, for In/NotIn, a non-empty value set.

    Attributes:
        key: The label key or property name.
        operator: ``In``, ``NotIn``, ``Exists`` or ``DoesNotExist``.
        values: Sorted values (In/NotIn only).

    Raises:
        SelectorError: Values missing for In/NotIn, or given for Exists/DoesNotExist.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise SelectorError(f"{self.key}: unknown operator {self.operator!r}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise SelectorError(f"{self.key}: operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise SelectorError(f"{self.key}: operator {self.operator} takes no values")
        object.__setattr__(self, "values", tuple(sorted(set(self.values))))

    def matches(self, pairs: Mapping[str, str]) -> bool:
        """Whether ``pairs`` (labels or properties) satisfy this requirement."""
        present = self.key in pairs
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and pairs[self.key] in self.values
        return not present or pairs[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if len(self.values) == 1:
            return f"{self.key}{'=' if self.operator == 'In' else '!='}{self.values[0]}"
        op = "in" if self.operator == "In" else "notin"
        return f"{self.key} {op} ({', '.join(self.values)})"


def matches(requirements: Iterable[Requirement], pairs: Mapping[str, str]) -> bool:
    """True when every requirement matches ``pairs`` (an empty selector matches all)."""
    return all(r.matches(pairs) for r in requirements)


def _split_terms(text: str) -> list[str]:
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
            if depth > 1:
                raise SelectorError(f"selector {text!r}: nested '(' at position {i}")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"selector {text!r}: unbalanced ')' at position {i}")
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorError(f"selector {text!r}: '(' is never closed")
    terms.append(text[start:])
    return [t.strip() for t in terms]


def _token(value: str, term: str, what: str) -> str:
    if not _TOKEN.match(value):
        raise SelectorError(f"selector term {term!r}: {what} {value!r} is not valid")
    return value


def parse_selector(text: str | None) -> tuple[Requirement, ...]:
    """Parse kubectl's selector syntax into requirements.

    Terms are comma-separated: ``k=v`` (or ``k==v``), ``k!=v``, ``k in (a, b)``,
    ``k notin (a, b)``, ``k`` (exists) and ``!k`` (does not exist). None or blank text is
    the empty selector.

    Args:
        text: The selector, e.g. ``env=prod,region in (eu-west-1, eu-central-1)``.

    Returns:
        The requirements, in the order written.

    Raises:
        SelectorError: A term is malformed; the message quotes it.
    """
    if text is None or not text.strip():
        return ()
    out: list[Requirement] = []
    for term in _split_terms(text):
        if not term:
            raise SelectorError(f"selector {text!r}: empty term")
        found = _SET_TERM.match(term)
        if found:
            values = [v.strip() for v in found["values"].split(",")]
            if not any(values):
                raise SelectorError(f"selector term {term!r}: the value set is empty")
            key = _token(found["key"], term, "key")
            op = _TEXT_OPERATORS[found["op"]]
            out.append(
                Requirement(
                    key=key, operator=op, values=tuple(_token(v, term, "value") for v in values)
                )
            )
            continue
        for sep, operator in (("==", "In"), ("!=", "NotIn"), ("=", "In")):
            if sep in term:
                key, _, value = term.partition(sep)
                key, value = key.strip(), value.strip()
                out.append(
                    Requirement(
                        key=_token(key, term, "key"),
                        operator=operator,  # type: ignore[arg-type]
                        values=(_token(value, term, "value"),),
                    )
                )
                break
        else:
            if term.startswith("!"):
                key = term[1:].strip()
                out.append(Requirement(key=_token(key, term, "key"), operator="DoesNotExist"))
            else:
                out.append(Requirement(key=_token(term, term, "key"), operator="Exists"))
    return tuple(out)


def format_selector(requirements: Iterable[Requirement]) -> str:
    """The text form of ``requirements`` (the inverse of :func:`parse_selector`)."""
    return ",".join(str(r) for r in requirements)


def from_label_selector(
    selector: Mapping[str, Any] | None, *, where: str, match_key: str = "matchLabels"
) -> tuple[Requirement, ...]:
    """Requirements of a structured selector (``metav1.LabelSelector`` shape).

    Args:
        selector: ``{matchLabels|<match_key>: {k: v}, matchExpressions: [{key, operator,
            values}]}``, or None for the empty selector.
        where: The field path for messages, e.g. ``spec.clusterSelector``.
        match_key: The name of the equality map (``matchProperties`` for properties).

    Raises:
        SelectorError: A field has the wrong type, an operator is unknown, or values are
            missing or extra; the message names the field.
    """
    if selector is None:
        return ()
    if not isinstance(selector, Mapping):
        raise SelectorError(f"{where}: must be an object")
    labels = selector.get(match_key)
    labels = {} if labels is None else labels
    if not isinstance(labels, Mapping):
        raise SelectorError(f"{where}.{match_key}: must be a map of strings")
    out = [
        Requirement(key=str(k), operator="In", values=(str(v),)) for k, v in sorted(labels.items())
    ]
    expressions = selector.get("matchExpressions")
    expressions = [] if expressions is None else expressions
    if not isinstance(expressions, Sequence) or isinstance(expressions, str):
        raise SelectorError(f"{where}.matchExpressions: must be a list")
    for i, expr in enumerate(expressions):
        path = f"{where}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping) or not expr.get("key"):
            raise SelectorError(f"{path}: needs a key")
        values = expr.get("values")
        values = [] if values is None else values
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise SelectorError(f"{path}.values: must be a list of strings")
        try:
            out.append(
                Requirement(
                    key=str(expr["key"]),
                    operator=expr.get("operator"),  # type: ignore[arg-type]
                    values=tuple(str(v) for v in values),
                )
            )
        except SelectorError as exc:
            raise SelectorError(f"{path}: {exc}") from None
    return tuple(out)


def to_label_selector(
    requirements: Iterable[Requirement], *, match_key: str = "matchLabels"
) -> dict[str, Any]:
    """The structured form of ``requirements``: single-value ``In`` as ``match_key``."""
    equal: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for r in requirements:
        if r.operator == "In" and len(r.values) == 1 and r.key not in equal:
            equal[r.key] = r.values[0]
            continue
        entry: dict[str, Any] = {"key": r.key, "operator": r.operator}
        if r.values:
            entry["values"] = list(r.values)
        expressions.append(entry)
    out: dict[str, Any] = {}
    if equal:
        out[match_key] = equal
    if expressions:
        out["matchExpressions"] = expressions
    return out
