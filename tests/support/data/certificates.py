"""A self-signed client certificate and key for tests of plugin output."""

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

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
