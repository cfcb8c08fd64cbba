"""Reading manifests as ``kubectl apply -f`` does, and the order they are applied in."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from cluster_inventory import _yaml
from cluster_inventory._textfile import UnreadableFileError, read_stream, read_text

CRD_KIND = "CustomResourceDefinition"


_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A manifest cannot be read; the message names the file, the document and the field.

    Attributes:
        source: The file and document, e.g. ``app.yaml#2`` (``-`` is standard input).
        field: The field at fault (``kind``, ``metadata.name``), or ``(file)``/``(document)``.
    """

    def __init__(self, source: str, problem: str, *, field: str = "(document)") -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.field = field


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """One object to apply and where it came from (``file#document``, from 1)."""

    obj: dict[str, Any]
    source: str

    @property
    def api_version(self) -> str:
        """``apiVersion``."""
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        """``kind``."""
        return str(self.obj["kind"])

    @property
    def group(self) -> str:
        """API group ("" for core)."""
        return self.api_version.rpartition("/")[0]

    @property
    def meta(self) -> dict[str, Any]:
        """``metadata`` (a mapping with a ``name``: :func:`load_manifests` checked it)."""
        meta: dict[str, Any] = self.obj["metadata"]
        return meta

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.meta["name"])

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` as written, or None."""
        return self.meta.get("namespace") or None

    def ref(self) -> str:
        """The ``kind[.group]/name`` kubectl prints, e.g. ``deployment.apps/web``."""
        group = f".{self.group}" if self.group else ""
        return f"{self.kind.lower()}{group}/{self.name}"


def _documents(text: str, source: str) -> list[tuple[str, Any]]:
    try:
        docs = _yaml.load_all(text)
    except yaml.YAMLError as exc:
        raise ManifestError(source, _yaml.describe(exc), field="(file)") from None
    return [(f"{source}#{i}", doc) for i, doc in enumerate(docs, start=1) if doc is not None]


def _manifest(where: str, doc: Any) -> list[Manifest]:
    if not isinstance(doc, dict):
        raise ManifestError(where, f"a manifest must be a mapping, not {type(doc).__name__}")
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise ManifestError(where, f"{key} is missing", field=key)
    if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
        out = []
        for i, item in enumerate(doc["items"]):
            out += _manifest(f"{where} items[{i}]", item)
        return out
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ManifestError(
            where,
            f"{doc['kind']} has no metadata.name (generateName cannot be applied)",
            field="metadata.name",
        )
    if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
        raise ManifestError(
            where, "metadata.namespace must be a string", field="metadata.namespace"
        )
    return [Manifest(obj=doc, source=where)]


def load_manifests(paths: Sequence[str | Path], *, stdin: TextIO | None = None) -> list[Manifest]:
    """Read manifests as ``kubectl apply -f`` does.

    Args:
        paths: Files, directories (their ``.yaml``, ``.yml`` and ``.json`` files, sorted, not
            recursive) or ``-`` for standard input. YAML streams may hold many documents;
            a ``...List`` document contributes its items.
        stdin: What ``-`` reads (default: ``sys.stdin``).

    Returns:
        The objects in the order read.

    Raises:
        ManifestError: A path is missing, a document is not valid YAML, lacks ``apiVersion``,
            ``kind`` or ``metadata.name``, or two documents name the same object.
    """
    out: list[Manifest] = []
    for raw in paths:
        if str(raw) == "-":
            try:
                text = read_stream(stdin or sys.stdin)
            except UnreadableFileError as exc:
                raise ManifestError("-", exc.problem, field="(file)") from None
            out += [m for w, d in _documents(text, "-") for m in _manifest(w, d)]
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in _SUFFIXES and p.is_file())
        elif path.exists():
            files = [path]
        else:
            raise ManifestError(str(path), "no such file or directory", field="(file)")
        for file in files:
            try:
                text = read_text(file)
            except UnreadableFileError as exc:
                raise ManifestError(str(file), exc.problem, field="(file)") from None
            out += [m for w, d in _documents(text, str(file)) for m in _manifest(w, d)]
    seen: dict[tuple[str, str, str | None, str], str] = {}
    for m in out:
        key = (m.group, m.kind, m.namespace, m.name)
        if key in seen:
            raise ManifestError(
                m.source, f"{m.ref()} is also defined in {seen[key]}", field="metadata.name"
            )
        seen[key] = m.source
    return out


def apply_order(manifests: Iterable[Manifest]) -> list[list[Manifest]]:
    """Phases of an apply: CRDs, then Namespaces, then the rest; file order within each.

    Empty phases are left out.
    """
    phases: list[list[Manifest]] = [[], [], []]
    for m in manifests:
        if m.kind == CRD_KIND and m.group == "apiextensions.k8s.io":
            phases[0].append(m)
        elif m.kind == "Namespace" and m.group == "":
            phases[1].append(m)
        else:
            phases[2].append(m)
    return [p for p in phases if p]
