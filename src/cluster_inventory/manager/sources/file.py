"""The static-file registration source: a YAML list of members, read at start and on change.

For small setups (``manager run --source file:PATH``): each entry names a member, its
kubeconfig file (relative to the list) and its cluster sets. A file that cannot be read is
never an empty fleet (the manager stops before writing, or keeps the last good view).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import _yaml, kube
from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.manager.rules.registration import (
    Registration,
    RegistrationError,
    is_dns_label,
    parse_clustersets,
)
from cluster_inventory.manager.sources.source import Snapshot

__all__ = ["FileRegistrationSource", "parse_file_registrations"]

_log = logging.getLogger("cluster_inventory.manager")


def parse_file_registrations(
    doc: Any, path: Path
) -> tuple[dict[str, Registration], list[RegistrationError]]:
    """Registrations in a static file.

    The file is YAML: ``clusters:`` (or a top-level list) of entries ``{name, kubeconfig,
    clustersets, context?, displayName?}``; ``kubeconfig`` is a path, relative to the file;
    ``clustersets`` a list or a comma-separated string.

    Raises:
        RegistrationError: The file is not such a list (every entry is then unusable). An
            invalid entry is returned among the errors; the others are kept.
    """
    where = f"file {path}"
    entries = doc.get("clusters") if isinstance(doc, Mapping) else doc
    if not isinstance(entries, list):
        raise RegistrationError(where, "clusters", "must be a list of clusters")
    good: dict[str, Registration] = {}
    bad: list[RegistrationError] = []
    for i, entry in enumerate(entries):
        field_base = f"clusters[{i}]"
        try:
            if not isinstance(entry, Mapping):
                raise RegistrationError(where, field_base, "must be a mapping")
            name = str(entry.get("name") or "")
            if not is_dns_label(name):
                raise RegistrationError(
                    where, f"{field_base}.name", "must be a DNS-1123 label (<= 63)"
                )
            try:
                reg = _file_entry(entry, name, path, f"{where} cluster {name}", field_base)
            except RegistrationError as exc:
                exc.member = name
                raise
            if name in good:
                raise RegistrationError(
                    reg.source, f"{field_base}.name", "is listed twice", member=name
                )
            good[name] = reg
        except RegistrationError as exc:
            bad.append(exc)
    return good, bad


def _file_entry(
    entry: Mapping[str, Any], name: str, path: Path, source: str, field_base: str
) -> Registration:
    raw_sets = entry.get("clustersets")
    if isinstance(raw_sets, list) and not all(isinstance(s, str) for s in raw_sets):
        raise RegistrationError(
            source, f"{field_base}.clustersets", "must be a list of cluster set names"
        )
    sets_text = ",".join(raw_sets) if isinstance(raw_sets, list) else raw_sets
    sets = parse_clustersets(str(sets_text or ""), source, f"{field_base}.clustersets")
    kubeconfig = entry.get("kubeconfig")
    if not kubeconfig:
        raise RegistrationError(source, f"{field_base}.kubeconfig", "is missing")
    kpath = path.parent / str(kubeconfig)
    try:
        kpath = kpath.resolve()
        conn = kube.connection_from_kubeconfig(kpath, context=entry.get("context") or None)
    except (OSError, ValueError, kube.KubeConfigError) as exc:  # ValueError: a NUL
        raise RegistrationError(source, f"{field_base}.kubeconfig", f"{kpath}: {exc}") from None
    return Registration(
        name=name,
        clustersets=sets,
        connection=conn,
        display_name=str(entry.get("displayName") or name),
        source=source,
    )


class FileRegistrationSource:
    """Registrations from a static YAML file (small setups), read at start and on change.

    A file that cannot be read (missing, unreadable, not YAML, not a list of clusters) is
    never an empty fleet: at start :meth:`wait_synced` raises and the manager stops before
    writing; later (the file polled every ``poll`` seconds, as kubelet refreshes a mounted
    ConfigMap) the last good view is kept and :meth:`failures` says why. An entry removed
    from the file is a member leaving the manager, like a deleted registration Secret.

    Args:
        path: The file (see :func:`parse_file_registrations` for its shape).
        poll: Seconds between checks of the file's size and modification time.
    """

    def __init__(self, path: Path, *, poll: float = 2.0) -> None:
        self.path = path
        self.poll = poll
        self._good: dict[str, Registration] = {}
        self._bad: list[RegistrationError] = []
        self._error: kube.SourceUnavailableError | None = None
        self._failing: str | None = None
        self._stamp: tuple[int, int] | None = None
        self._tasks = kube.TaskSet(f"registration file {path}", logger=_log)

    def _read(self) -> None:
        """Read the file into the view, or set ``_error`` (the view is left as it was)."""
        where = f"registration file {self.path}"
        self._error = None
        try:
            self._stamp = self._stat()
            text = read_text(self.path)
        except UnreadableFileError as exc:
            self._error = kube.SourceUnavailableError(where, exc.problem)
            return
        try:
            self._good, self._bad = parse_file_registrations(_yaml.load(text), self.path)
        except yaml.YAMLError as exc:
            self._error = kube.SourceUnavailableError(where, _yaml.describe(exc))
        except RegistrationError as exc:
            self._error = kube.SourceUnavailableError(where, f"{exc.field}: {exc.problem}")

    def _stat(self) -> tuple[int, int] | None:
        try:
            found = self.path.stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def start(self, on_change: Callable[[], None]) -> None:
        """Read the file (a failure is raised by :meth:`wait_synced`), then poll it."""
        self._read()
        on_change()
        if self._error is None and self.poll > 0:
            self._tasks.spawn(self._watch(on_change), name="poll")

    async def _watch(self, on_change: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(self.poll)
            if self._stat() == self._stamp:
                continue
            self._read()
            failing = None if self._error is None else str(self._error)
            if failing != self._failing:
                self._failing = failing
                if failing:
                    _log.warning("%s; the last good view is kept", failing)
            on_change()

    async def wait_synced(self) -> None:
        """Nothing to wait for: the file was read in :meth:`start`.

        Raises:
            SourceUnavailableError: The file cannot be read or is not a list of clusters.
        """
        if self._error is not None:
            raise self._error

    def failures(self) -> list[str]:
        """Why the file cannot be read now (its last good view is kept), if it cannot."""
        return [self._failing] if self._failing else []

    def snapshot(self) -> Snapshot:
        """The registrations; invalid entries carry no API object (logged, no Event)."""
        return dict(self._good), [({}, e) for e in self._bad]

    async def stop(self) -> None:
        """Stop polling the file."""
        await self._tasks.stop()
