"""The agent's state directory: its key, certificate and kubeconfig, and nothing else.

What the agent keeps on its member (``docs/agent.md``, "What the agent leaves on its
member"): ``agent.key`` (0600), ``agent.crt`` and a ``kubeconfig`` naming them, written
atomically, and ``.lock`` while an agent runs with the directory. The directory is made
(0700) and shown to be writable before the agent files a CSR (:meth:`IdentityStore.prepare`),
so a directory it cannot use fails at start, not after the hub's admin accepted the member.
``agent unjoin`` removes exactly these files (:meth:`IdentityStore.remove`), never the hub's
objects.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.x509.oid import NameOID

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.identity import AgentIdentity
from cluster_inventory.api.agents import agent_user
from cluster_inventory.api.constants import AGENT_USER_PREFIX
from cluster_inventory.kubeconfig import one_cluster_document

if TYPE_CHECKING:
    from cluster_inventory.shapes import RawKubeconfig

__all__ = ["IdentityStore", "StateDirError", "stored_member"]

_KEY_FILE = "agent.key"
_CERT_FILE = "agent.crt"
_KUBECONFIG_FILE = "kubeconfig"
_LOCK_FILE = ".lock"
_WRITE_TEST = ".write-test"


class StateDirError(OSError):
    """The agent's state directory cannot be used (an ``OSError``).

    Attributes:
        directory: The directory.
        problem: Why (``cannot be created: Not a directory``, ``is in use by ...``).
    """

    def __init__(self, directory: Path, problem: str) -> None:
        self.directory = directory
        self.problem = problem
        super().__init__(f"state directory {directory}: {problem}")


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def stored_member(directory: Path) -> str | None:
    """The member whose certificate ``directory`` holds (its CN), or None if none parses."""
    try:
        cert = x509.load_pem_x509_certificate((directory / _CERT_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME):
        value = str(attr.value)
        if value.startswith(AGENT_USER_PREFIX):
            return value[len(AGENT_USER_PREFIX) :]
    return None


class IdentityStore:
    """The agent's state directory: ``agent.key`` (0600), ``agent.crt`` and ``kubeconfig``.

    The kubeconfig names the key and certificate files (relative to itself), so ``kubectl
    --kubeconfig`` (and :func:`cluster_inventory.kube.connection_from_kubeconfig`) act as
    the agent, wherever they run from.

    Args:
        directory: The state directory (created 0700 by :meth:`prepare` or the first write).
        now: Wall clock.
    """

    def __init__(self, directory: Path, *, now: Callable[[], dt.datetime] = utcnow) -> None:
        self.directory = directory
        self.now = now

    @property
    def key_path(self) -> Path:
        """The private key file."""
        return self.directory / _KEY_FILE

    @property
    def cert_path(self) -> Path:
        """The certificate file."""
        return self.directory / _CERT_FILE

    @property
    def kubeconfig_path(self) -> Path:
        """The kubeconfig of the issued identity."""
        return self.directory / _KUBECONFIG_FILE

    @property
    def lock_path(self) -> Path:
        """The lock an agent holds while it runs with this directory (its pid inside)."""
        return self.directory / _LOCK_FILE

    def written_files(self) -> list[Path]:
        """Every file the agent may write here, its temporary files included."""
        names = [_KEY_FILE, _CERT_FILE, _KUBECONFIG_FILE]
        return [
            *(self.directory / n for n in names),
            *(self.directory / f".{n}.tmp" for n in names),
            self.directory / _WRITE_TEST,
            self.lock_path,
        ]

    def prepare(self) -> None:
        """Create the directory (0700) if it is missing and show that it can be written.

        An existing directory keeps its mode (a pod's ``emptyDir`` is the kubelet's); what
        the agent writes in it is its own (the key 0600).

        Raises:
            StateDirError: It cannot be created, is not a directory, or a file cannot be
                written in it (read-only, full, not ours).
        """
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except FileExistsError:
            raise StateDirError(self.directory, "exists and is not a directory") from None
        except OSError as exc:
            raise StateDirError(self.directory, f"cannot be created: {_reason(exc)}") from None
        probe = self.directory / _WRITE_TEST
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"ok\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            probe.unlink()
        except OSError as exc:
            raise StateDirError(self.directory, f"cannot be written: {_reason(exc)}") from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory for one agent for the block (:meth:`prepare` first).

        An ``flock`` on ``.lock`` (released by the kernel if the process dies), with the
        holder's pid written in it for :meth:`remove`'s message.

        Raises:
            StateDirError: See :meth:`prepare`, or another process holds it.
        """
        self.prepare()
        fd = self._lock()
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            with contextlib.suppress(OSError):
                self.lock_path.unlink()
            os.close(fd)

    def _lock(self) -> int:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateDirError(self.directory, f"cannot be locked: {_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StateDirError(
                self.directory, f"is in use by a running agent (pid {holder}); stop it first"
            ) from None
        return fd

    def remove(self) -> list[Path]:
        """Delete what the agent wrote here, then the directory if that leaves it empty.

        Returns:
            What was deleted, in order (the directory last, if it went).

        Raises:
            StateDirError: A running agent holds the directory (:meth:`locked`), or a file
                cannot be deleted.
        """
        if not self.directory.is_dir():
            return []
        left_behind = self.lock_path.exists()  # by an agent that was killed
        fd = self._lock()
        removed: list[Path] = []
        try:
            for path in self.written_files():
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise StateDirError(
                        self.directory, f"cannot delete {path.name}: {_reason(exc)}"
                    ) from None
                if path != self.lock_path or left_behind:  # not the lock taken just now
                    removed.append(path)
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):  # not empty: someone else's files stay
            self.directory.rmdir()
            removed.append(self.directory)
        return removed

    def load(self, name: str) -> AgentIdentity | None:
        """The stored identity of member ``name``, or None if there is none usable.

        None when a file is missing, the certificate does not parse, is for another member,
        or has expired: the agent then joins again with its bootstrap identity.
        """
        try:
            key_pem = self.key_path.read_bytes()
            cert_pem = self.cert_path.read_bytes()
            cert = x509.load_pem_x509_certificate(cert_pem)
        except (OSError, ValueError):
            return None
        cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if [a.value for a in cns] != [agent_user(name)] or cert.not_valid_after_utc <= self.now():
            return None
        return AgentIdentity(name=name, key_pem=key_pem, cert_pem=cert_pem)

    def save(self, identity: AgentIdentity, bootstrap: kube.ClusterConnection) -> None:
        """Write the key (0600), the certificate and a kubeconfig naming them.

        Each file is written beside its final name and renamed over it, so a crash leaves
        the old identity or the new one, never half of each.

        Raises:
            OSError: The directory cannot be written.
        """
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_atomic(self.key_path, identity.key_pem, 0o600)
        _write_atomic(self.cert_path, identity.cert_pem, 0o644)
        # Relative to the kubeconfig itself, as kubectl reads them: the directory may be
        # given relative to the agent's working directory, or be moved whole.
        doc = _kubeconfig(identity.name, bootstrap, Path(_CERT_FILE), Path(_KEY_FILE))
        _write_atomic(self.kubeconfig_path, json.dumps(doc, indent=2).encode(), 0o600)


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _kubeconfig(
    name: str, bootstrap: kube.ClusterConnection, cert_path: Path, key_path: Path
) -> RawKubeconfig:
    return one_cluster_document(
        name="hub",
        cluster=bootstrap.kubeconfig_cluster(),
        user={"client-certificate": str(cert_path), "client-key": str(key_path)},
        user_name=agent_user(name),
    )
