"""TLS client contexts for a :class:`ClusterConnection`, the CA kept in memory.

A client key has to pass through a file for ``ssl.load_cert_chain``: it is written 0600 into
a private directory and unlinked at once. Contexts are shared among connections with the same
TLS material, since building one per member dominated a large fleet's start-up.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from cluster_inventory.kube._connection import ClusterConnection
from cluster_inventory.kube.errors import KubeConfigError

__all__ = ["shared_ssl_context", "ssl_context_for"]


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
