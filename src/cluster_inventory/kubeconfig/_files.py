"""Finding and merging kubeconfig files as clientcmd does: the search list, then first wins.

Relative file references are made absolute against the file that holds them while merging,
so that a merged document no longer depends on where each entry came from.
"""

from __future__ import annotations

import json
import os

from cluster_inventory.kubeconfig._model import KubeconfigError

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from cluster_inventory.shapes import RawKubeconfig

__all__ = ["load_merged", "search_paths"]

_KINDS = ("clusters", "users", "contexts")
_PATH_KEYS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for JSON
        pass
    from cluster_inventory import _yaml

    try:
        return _yaml.load_block(text)
    except _yaml.Unsupported:
        pass
    import yaml  # the full parser, only for files outside kubectl's subset

    try:
        return _yaml.load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{source}: {_yaml.describe(exc)}") from None


def search_paths(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[str] | None:
    """The files kubectl would read, in precedence order, or None for "try in-cluster".

    Args:
        explicit: ``--kubeconfig``.
        environ: The environment (default ``os.environ``).

    Returns:
        ``[explicit]``; else the ``$KUBECONFIG`` list (without empty entries and
        duplicates); else None when ``$KUBECONFIG`` is unset or empty (the caller tries the
        in-cluster config, then ``~/.kube/config``).
    """
    if explicit:
        return [os.fspath(explicit)]
    env = os.environ if environ is None else environ
    paths: list[str] = []
    for entry in (env.get("KUBECONFIG") or "").split(os.pathsep):
        if entry and entry not in paths:
            paths.append(entry)
    return paths or None


def _absolute(value: Any, base: str) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return os.path.normpath(os.path.join(base, value))  # cleaned, as Go's filepath.Join
    return value


def _resolve_paths(kind: str, body: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A copy of ``body`` with its file references made absolute (clientcmd's rule)."""
    out = dict(body)
    for key in _PATH_KEYS.get(kind, ()):
        if key in out:
            out[key] = _absolute(out[key], base)
    exec_stanza = out.get("exec")
    if kind == "users" and isinstance(exec_stanza, dict):
        command = exec_stanza.get("command")
        # Only a command with a path separator is a file reference; a bare name uses PATH.
        if isinstance(command, str) and os.sep in command:
            out["exec"] = {**exec_stanza, "command": _absolute(command, base)}
    return out


def load_merged(paths: list[str], *, required: bool = False) -> tuple[RawKubeconfig, str]:
    """Read and merge ``paths`` as clientcmd does.

    Args:
        paths: Files in precedence order.
        required: A missing file is an error (an explicit ``--kubeconfig``); otherwise it
            is skipped, as a missing ``$KUBECONFIG`` entry is.

    Returns:
        (the merged ``kind: Config`` mapping, a description of the files read). The mapping
        is empty when no file exists.

    Raises:
        KubeconfigError: A file is unreadable, not JSON or YAML, or not a mapping.
    """
    merged: dict[str, Any] = {kind: {} for kind in _KINDS}
    current: str | None = None
    read: list[str] = []
    for path in paths:
        try:
            text = _read(path).decode()
        except FileNotFoundError:
            if required:
                raise KubeconfigError(f"{path}: cannot read: no such file") from None
            continue
        except OSError as exc:
            raise KubeconfigError(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise KubeconfigError(f"{path}: not UTF-8 text") from None
        doc = _parse(text, path)
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise KubeconfigError(f"{path}: not a kubeconfig mapping")
        read.append(path)
        base = os.path.dirname(os.path.abspath(path))
        for kind in _KINDS:
            items = doc.get(kind) or []
            if not isinstance(items, list):
                raise KubeconfigError(f"{path}: {kind} must be a list")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise KubeconfigError(f"{path}: every entry of {kind} needs a name")
                body = item.get(kind[:-1])
                if not isinstance(body, dict):
                    name = item["name"]
                    raise KubeconfigError(f"{path}: {kind}[name={name}].{kind[:-1]} is missing")
                # The first file to define a name wins; later ones never change it.
                merged[kind].setdefault(item["name"], (_resolve_paths(kind, body, base), path))
        if current is None and doc.get("current-context"):
            current = str(doc["current-context"])
    # Built from checked entries; Any is the seam to RawKubeconfig (no cast: typing stays out).
    document: Any = {
        kind: [{"name": name, kind[:-1]: body} for name, (body, _) in merged[kind].items()]
        for kind in _KINDS
    }
    if current is not None:
        document["current-context"] = current
    return document, os.pathsep.join(read)
