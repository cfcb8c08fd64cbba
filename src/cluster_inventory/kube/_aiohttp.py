"""aiohttp, imported without the two TLS contexts it builds at import.

aiohttp (3.10 and later) builds its default client contexts, verified and unverified, when
``aiohttp.connector`` is imported, so that no event loop ever waits on the disk for them.
Each loads the system's CA bundle: with OpenSSL 3, 33 ms of CPU and 1 MiB apiece on the
project machine, a fifth of what ``import cluster_inventory.runtime`` costs (issue 48,
``docs/benchmarks.md``). No client of ours uses them: every connector the kube stack builds
is given its connection's own context (``_tls.shared_ssl_context``). So aiohttp is imported
with the CA file OpenSSL reads by default pointed at an empty one (the environment variable
OpenSSL consults, ``SSL_CERT_FILE``, set for the import only and restored after), and its
two contexts are replaced by :class:`~cluster_inventory.kube._tls.DeferredTLSContext`
objects that build aiohttp's own (``_make_ssl_context``, under the real environment) on the
first handshake that asks for one: a user's ``aiohttp.ClientSession()`` with default TLS
still verifies against the system's (or ``SSL_CERT_FILE``'s) CAs.

If aiohttp was imported before us, nothing is changed. If a later aiohttp keeps other
contexts at module level, the import fails here, loudly, rather than leave a context with
no CA behind.
"""

from __future__ import annotations

import functools
import os
import ssl
import sys

from cluster_inventory.kube._tls import DeferredTLSContext

__all__: list[str] = []

#: aiohttp.connector's contexts built at import, and whether each verifies.
_CONTEXTS = {"_SSL_CONTEXT_VERIFIED": True, "_SSL_CONTEXT_UNVERIFIED": False}


def _import_without_contexts() -> None:
    variable = ssl.get_default_verify_paths().openssl_cafile_env
    saved = os.environ.get(variable)
    os.environ[variable] = os.devnull
    try:
        import aiohttp.connector as connector
    finally:
        if saved is None:
            del os.environ[variable]
        else:
            os.environ[variable] = saved
    build = getattr(connector, "_make_ssl_context", None)
    for name, verified in _CONTEXTS.items():
        if build is not None and isinstance(getattr(connector, name, None), ssl.SSLContext):
            setattr(
                connector,
                name,
                DeferredTLSContext(functools.partial(build, verified), verified=verified),
            )
    left = [
        name
        for name, value in vars(connector).items()
        if isinstance(value, ssl.SSLContext) and not isinstance(value, DeferredTLSContext)
    ]
    if left:
        raise ImportError(
            f"aiohttp.connector keeps TLS contexts this module does not know ({', '.join(left)}):"
            " they were built without the system CAs; kube/_aiohttp.py must follow aiohttp"
        )


if "aiohttp.connector" not in sys.modules:
    _import_without_contexts()
