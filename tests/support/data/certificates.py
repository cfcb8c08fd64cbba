"""Certificates for unit tests: a self-signed client pair, and agent certificates of a given life.

``TEST_CERT``/``TEST_KEY`` are one self-signed client certificate and key (plugin output).
:func:`certificate` issues a certificate for a given key, common name and validity, signed
by a throwaway issuer, as the agent's rotation tests need; ``T0`` is the fixed instant they
start at, and :func:`bootstrap_connection` a hub connection whose CA is :data:`CA`.
"""

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster_inventory import kube
from cluster_inventory.agent import new_private_key

_key = ec.generate_private_key(ec.SECP256R1())
_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
_now = dt.datetime.now(dt.UTC)
_cert = (
    x509.CertificateBuilder()
    .subject_name(_name)
    .issuer_name(_name)
    .public_key(_key.public_key())
    .serial_number(1)
    .not_valid_before(_now)
    .not_valid_after(_now + dt.timedelta(days=1))
    .sign(_key, hashes.SHA256())
)
TEST_CERT = _cert.public_bytes(serialization.Encoding.PEM)
TEST_KEY = _key.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)

#: The instant the agent's certificate tests start at.
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def certificate(key_pem: bytes, cn: str, start: dt.datetime, hours: float) -> bytes:
    """A certificate for ``key_pem``'s public key, self-signed by a throwaway issuer key."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    issuer = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")]))
        .public_key(key.public_key())  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(hours=hours))
        .sign(issuer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


#: The hub CA of :func:`bootstrap_connection`.
CA = certificate(new_private_key(), "ca", T0, 1)


def bootstrap_connection() -> kube.ClusterConnection:
    """A hub connection with a bootstrap token, as an agent's bootstrap kubeconfig gives it."""
    return kube.ClusterConnection(
        server="https://127.0.0.1:6443", ca_data=CA, token="bootstrap-token"
    )
