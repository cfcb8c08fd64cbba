"""aiohttp's default TLS contexts, deferred by ``kube/_aiohttp.py``, still verify as aiohttp's.

The kube package imports aiohttp with OpenSSL's CA file pointed at an empty one, so that
the two contexts aiohttp builds at import load no CA bundle, then replaces them with
contexts built on first use (issue 48). Written as the attacker: a server whose certificate
no trusted CA signed must be refused by a default ``ClientSession``, on both event loops;
the CA file a user names in ``SSL_CERT_FILE`` must still be the trust store; ``ssl=False``
must still mean no verification. Each check runs in a fresh interpreter (in this one
aiohttp was imported long ago, and deferring is a no-op then).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_inventory.testing._certs import CertificateAuthority

#: A loopback HTTPS server with the given certificate, and one default aiohttp client GET.
_CLIENT = """
import asyncio, os, ssl, sys
import cluster_inventory.kube
import aiohttp, aiohttp.connector as connector

async def main(cert, key, verify):
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    async def answer(reader, writer):
        await reader.readuntil(b"\\r\\n\\r\\n")
        writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            kwargs = {} if verify else {"ssl": False}
            async with session.get(f"https://127.0.0.1:{port}/", **kwargs) as response:
                print("answered", response.status, await response.text())
    except aiohttp.ClientConnectorCertificateError as exc:
        print("refused", type(exc.certificate_error).__name__)
    finally:
        server.close()

if sys.argv[4] == "uvloop":
    import uvloop
    uvloop.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "verify"))
else:
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "verify"))
"""


@pytest.fixture
def server_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A CA outside every trust store, and a serving pair for 127.0.0.1 it signed."""
    ca = CertificateAuthority("untrusted-by-the-system")
    cert, key, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    ca.serving_pair("127.0.0.1").write(cert, key)
    ca_file.write_bytes(ca.cert_pem)
    return cert, key, ca_file


def _client(
    files: tuple[Path, Path, Path], mode: str, loop: str, ca_file: Path | None = None
) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    if ca_file is not None:
        env["SSL_CERT_FILE"] = str(ca_file)
    cert, key, _ = files
    return subprocess.run(
        [sys.executable, "-c", _CLIENT, str(cert), str(key), mode, loop],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    ).stdout.strip()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_default_session_refuses_a_certificate_no_trusted_ca_signed(
    server_files: tuple[Path, Path, Path], loop: str
) -> None:
    assert _client(server_files, "verify", loop) == "refused SSLCertVerificationError"


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_default_session_trusts_the_ca_file_the_environment_names(
    server_files: tuple[Path, Path, Path], loop: str
) -> None:
    # The import pointed SSL_CERT_FILE elsewhere for a moment; the user's value is back.
    assert _client(server_files, "verify", loop, ca_file=server_files[2]) == "answered 200 ok"


def test_ssl_false_still_verifies_nothing(server_files: tuple[Path, Path, Path]) -> None:
    assert _client(server_files, "no-verify", "uvloop") == "answered 200 ok"


def test_importing_kube_builds_neither_context_and_restores_the_environment() -> None:
    code = (
        "import os\n"
        "os.environ['SSL_CERT_FILE'] = '/users/own/ca.pem'\n"
        "import cluster_inventory.kube\n"
        "import aiohttp.connector as c\n"
        "print(os.environ['SSL_CERT_FILE'],"
        " c._SSL_CONTEXT_VERIFIED.built, c._SSL_CONTEXT_UNVERIFIED.built,"
        " c._SSL_CONTEXT_UNVERIFIED.verify_mode.name, c._SSL_CONTEXT_VERIFIED.verify_mode.name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "/users/own/ca.pem False False CERT_NONE CERT_REQUIRED"


def test_an_unset_ca_file_variable_stays_unset() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    code = "import os, cluster_inventory.kube\nprint('SSL_CERT_FILE' in os.environ)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    assert out == "False"
