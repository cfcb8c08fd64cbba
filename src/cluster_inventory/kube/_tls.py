"""TLS client contexts for a :class:`ClusterConnection`, the CA kept in memory.

A client key has to pass through a file for ``ssl.load_cert_chain``: it is written 0600 into
a private directory and unlinked at once. Contexts are shared among connections with the same
TLS material, since building one per member dominated a large fleet's start-up. A client
whose certificate rotates (the member agent's) holds a :class:`ReloadableTLSContext` instead;
a context nobody may ever use is a :class:`DeferredTLSContext`, built on its first handshake.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_inventory.kube._connection import ClusterConnection
from cluster_inventory.kube.errors import KubeConfigError

__all__ = ["DeferredTLSContext", "ReloadableTLSContext", "shared_ssl_context", "ssl_context_for"]


def ssl_context_for(conn: ClusterConnection) -> ssl.SSLContext:
    """Build a TLS client context for ``conn`` with the CA kept in memory.

    Raises:
        KubeConfigError: The CA or client certificate cannot be loaded.
    """
    try:
        if conn.ca_data:
            ctx = ssl.create_default_context(cadata=conn.ca_data.decode())
        else:
            ctx = ssl.create_default_context()
    except (ssl.SSLError, UnicodeDecodeError) as exc:
        raise KubeConfigError(f"{conn.name or conn.server}: CA data is not a PEM bundle") from exc
    if conn.insecure_skip_tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if conn.client_cert_data and conn.client_key_data:
        with tempfile.TemporaryDirectory(prefix="ci-tls-") as tmp:
            cert_path = Path(tmp) / "client.crt"
            key_path = Path(tmp) / "client.key"
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(conn.client_key_data)
            cert_path.write_bytes(conn.client_cert_data)
            try:
                ctx.load_cert_chain(cert_path, key_path)
            except ssl.SSLError as exc:
                raise KubeConfigError(
                    f"{conn.name or conn.server}: client certificate and key do not load"
                ) from exc
            finally:
                key_path.unlink()
    return ctx


#: TLS material -> the context built from it, shared by every client with that material.
_SHARED_CONTEXTS: dict[tuple[bytes | None, bytes | None, bytes | None, bool], ssl.SSLContext] = {}
#: Contexts kept at most (the oldest goes first); a fleet has a few CAs and credentials.
_SHARED_CONTEXTS_MAX = 256


def shared_ssl_context(conn: ClusterConnection) -> ssl.SSLContext:
    """The TLS client context for ``conn``, shared with every connection of the same material.

    A context loads its CA bundle and client key once; members registered with the same CA
    and client credential (a fleet issued by one CA, a cluster manager with one identity)
    share one instead of building one each: at thousands of members, the contexts were a
    sixth of a replica's start-up CPU and a large part of its memory (``docs/scale.md``).
    The context is never changed after it is built (the server name is given per request),
    so sharing it among clients and threads is safe. Callers must not change it either; one
    that wants its own uses :func:`ssl_context_for`.

    Raises:
        KubeConfigError: The CA or client certificate cannot be loaded.
    """
    key = (
        conn.ca_data,
        conn.client_cert_data,
        conn.client_key_data,
        conn.insecure_skip_tls_verify,
    )
    ctx = _SHARED_CONTEXTS.get(key)
    if ctx is None:
        ctx = ssl_context_for(conn)
        if len(_SHARED_CONTEXTS) >= _SHARED_CONTEXTS_MAX:
            _SHARED_CONTEXTS.pop(next(iter(_SHARED_CONTEXTS)))
        _SHARED_CONTEXTS[key] = ctx
    return ctx


class _DelegatingTLSContext(ssl.SSLContext):
    """A TLS context that hands every session it starts to another context, its target.

    Every connection asyncio (and uvloop) opens starts with :meth:`wrap_bio`, a blocking
    socket with :meth:`wrap_socket`; both go to the target, so its material (CA, client
    certificate, ALPN) is what a handshake uses, whatever this object's own settings are.
    The target is ``_current``, built by ``_build`` on first use when there is none yet.
    """

    _current: ssl.SSLContext | None = None
    _build: Callable[[], ssl.SSLContext] | None = None

    def _target(self) -> ssl.SSLContext:
        current = self._current
        if current is None:
            if self._build is None:
                raise RuntimeError("a delegating TLS context has neither a context nor a builder")
            current = self._current = self._build()
        return current

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        """Start a TLS session with the target's material (asyncio's and uvloop's way)."""
        return self._target().wrap_bio(
            incoming,
            outgoing,
            server_side=server_side,
            server_hostname=server_hostname,
            session=session,
        )

    def wrap_socket(self, sock: Any, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        """Wrap a blocking socket with the target's material."""
        return self._target().wrap_socket(sock, *args, **kwargs)


class ReloadableTLSContext(_DelegatingTLSContext):
    """A TLS client context whose material can be replaced while clients use it.

    client-go's answer to a rotating client certificate is ``GetClientCertificate``: the
    certificate is chosen per TLS handshake. Python's ``ssl`` has no such hook, but every
    connection asyncio (and uvloop) opens starts with :meth:`wrap_bio`; this context hands
    that to the context built from the latest material, swapped whole by :meth:`reload` (one
    reference assignment: a handshake never sees a new certificate with an old key). A
    connection already open keeps the certificate it started with until it is closed (an
    idle one after the client's keep-alive, 15 s by default); a rotated certificate is
    renewed well before the old one expires, so that is harmless. Pass it to
    :func:`~cluster_inventory.kube.new_client` as ``ssl_context``; clones
    (:func:`~cluster_inventory.kube.clone_client`) share it.

    Args:
        conn: The connection whose CA and client certificate to use first.

    Raises:
        KubeConfigError: The CA or client certificate cannot be loaded.
    """

    def __new__(cls, conn: ClusterConnection) -> ReloadableTLSContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, conn: ClusterConnection) -> None:
        super().__init__()
        self._current = ssl_context_for(conn)

    def reload(self, conn: ClusterConnection) -> None:
        """Use ``conn``'s CA and client certificate for every connection opened from now on.

        Raises:
            KubeConfigError: The CA or client certificate cannot be loaded (the old
                material stays in use).
        """
        self._current = ssl_context_for(conn)


class DeferredTLSContext(_DelegatingTLSContext):
    """A TLS client context built by ``build`` on its first handshake, then kept.

    For contexts a library makes ready in case they are wanted: aiohttp builds its two
    defaults at import, each loading the system CA bundle (33 ms of CPU and 1 MiB each on
    the project machine, OpenSSL 3), and no client of ours uses them (``kube/_aiohttp.py``).
    The first handshake through one pays that instead, once; two at once may both build it,
    and one of the two contexts is kept.

    Args:
        build: Makes the real context (no arguments; called at most once per first use).
        verified: False for a context that verifies nothing (``CERT_NONE``, no host
            check), so that one reading this object's settings sees the real context's.
    """

    def __new__(
        cls, build: Callable[[], ssl.SSLContext], *, verified: bool = True
    ) -> DeferredTLSContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, build: Callable[[], ssl.SSLContext], *, verified: bool = True) -> None:
        super().__init__()
        if not verified:
            self.check_hostname = False
            self.verify_mode = ssl.CERT_NONE
        self._build = build

    @property
    def built(self) -> bool:
        """Whether the real context was built (by a first handshake)."""
        return self._current is not None
