"""Throwaway certificate authorities for local control planes.

Mirrors envtest's layout: one CA signs the apiserver's serving certificate, a separate CA
signs client certificates (CN = user, O = groups), and a third key pair signs service-account
tokens so that the TokenRequest API works. Keys are ECDSA P-256: generating them takes
microseconds, so every control plane gets its own fresh set.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "KeyPair", "signing_key_pair"]

_VALIDITY = dt.timedelta(hours=168)


@dataclass(frozen=True, kw_only=True)
class KeyPair:
    """A PEM-encoded certificate and private key.

    Attributes:
        cert_pem: The certificate, PEM bytes.
        key_pem: The unencrypted PKCS#8 private key, PEM bytes.
    """

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Write the pair to disk; the key file is created with mode 0600."""
        cert_path.write_bytes(self.cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(self.key_pem)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates.

    Args:
        common_name: Subject CN of the CA certificate.
    """

    def __init__(self, common_name: str = "cluster-inventory-testing") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "cluster-inventory"),
            ]
        )
        self._name = name
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, PEM bytes."""
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issuer_pair(self) -> KeyPair:
        """The CA's own certificate and key (used as a service-account signing pair)."""
        return KeyPair(cert_pem=self.cert_pem, key_pem=_key_pem(self._key))

    def _issue(
        self,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None = None,
    ) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(
            cert_pem=cert.public_bytes(serialization.Encoding.PEM), key_pem=_key_pem(key)
        )

    def serving_pair(self, host: str = "127.0.0.1") -> KeyPair:
        """Issue a serving certificate for ``localhost`` and ``host`` (an IP or DNS name)."""
        sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
        if host != "127.0.0.1":
            sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        return self._issue(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]),
            ExtendedKeyUsageOID.SERVER_AUTH,
            sans,
        )

    def client_pair(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """Issue a client certificate that kube-apiserver maps to ``user`` in ``groups``."""
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        return self._issue(x509.Name(attrs), ExtendedKeyUsageOID.CLIENT_AUTH)


def signing_key_pair() -> KeyPair:
    """Return a key pair for signing service-account tokens (public key as a certificate).

    kube-apiserver's ``--service-account-key-file`` accepts a certificate, so the public half
    is wrapped in a self-signed one.
    """
    return CertificateAuthority("service-account-signer").issuer_pair()
