"""Client certificates through the CSR API: key, request, approval, the wait for the signer.

The one implementation of kubelet's TLS-bootstrap steps (``certificates.k8s.io/v1``
CertificateSigningRequest for signer ``kubernetes.io/kube-apiserver-client``) that the
member agent's join (:mod:`cluster_inventory.agent.join`) and the hub admin's expiring
bootstrap kubeconfig (:mod:`cluster_inventory.manager.admin.agent_bootstrap`) share. The wait is a
watch of the one CSR (a field selector on its name), never a poll; key material stays with
the caller and is never put in an error or a log line.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster_inventory.api import format_time, objects
from cluster_inventory.api.constants import SIGNER_KUBE_APISERVER_CLIENT
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import create, delete, request
from cluster_inventory.kube.errors import AlreadyExistsError
from cluster_inventory.kube.informer import Informer
from cluster_inventory.kube.resources import CERTIFICATE_SIGNING_REQUESTS

__all__ = [
    "MIN_EXPIRATION_SECONDS",
    "CertificateRequestError",
    "approve",
    "certificate_request_pem",
    "client_certificate_signing_request",
    "issued_certificate",
    "new_private_key",
    "wait_for_certificate",
]

#: The API server's minimum ``spec.expirationSeconds`` (``certificates.k8s.io/v1``).
MIN_EXPIRATION_SECONDS = 600

_log = logging.getLogger(__name__)


class CertificateRequestError(Exception):
    """A CSR that will not give the certificate: denied, failed, deleted, late or mismatched.

    Attributes:
        csr: The CertificateSigningRequest concerned, e.g. ``CertificateSigningRequest x``.
        field: The field that says why, e.g. ``status.conditions[Denied]``.
        problem: What happened (the hub's reason and message; never key material).
    """

    def __init__(self, csr: str, field: str, problem: str) -> None:
        self.csr = csr
        self.field = field
        self.problem = problem
        super().__init__(f"{csr}: {field}: {problem}")


def new_private_key() -> bytes:
    """A fresh ECDSA P-256 private key, unencrypted PKCS#8 PEM (keep it where it was made)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def certificate_request_pem(
    key_pem: bytes, *, common_name: str, organizations: Iterable[str] = ()
) -> bytes:
    """The PEM certificate request for ``CN=common_name, O=...`` signed with ``key_pem``.

    For signer ``kubernetes.io/kube-apiserver-client`` the CN becomes the user name and each
    O a group (the API server's x509 authenticator).

    Raises:
        ValueError: ``key_pem`` is not an EC private key.
    """
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("certificate request: the key is not an EC private key")
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM)


def client_certificate_signing_request(
    request_pem: bytes,
    *,
    generate_name: str | None = None,
    name: str | None = None,
    labels: Mapping[str, str],
    expiration_seconds: int,
    usages: Iterable[str] = ("digital signature", "client auth"),
) -> dict[str, Any]:
    """A CertificateSigningRequest for signer ``kubernetes.io/kube-apiserver-client``.

    Args:
        request_pem: The PEM request (:func:`certificate_request_pem`).
        generate_name: ``metadata.generateName`` (give it or ``name``).
        name: ``metadata.name``: a name chosen in advance (one the hub's RBAC names).
        labels: ``metadata.labels``.
        expiration_seconds: ``spec.expirationSeconds``.
        usages: ``spec.usages`` (an ECDSA key: no key encipherment).

    Raises:
        ValueError: ``expiration_seconds`` is under 600 (the API's minimum), or not exactly
            one of ``generate_name`` and ``name`` is given.
    """
    if (generate_name is None) == (name is None):
        raise ValueError("give exactly one of generate_name and name")
    if expiration_seconds < MIN_EXPIRATION_SECONDS:
        raise ValueError(
            f"expirationSeconds must be at least {MIN_EXPIRATION_SECONDS} "
            f"(the CSR API's minimum), not {expiration_seconds}"
        )
    return {
        "apiVersion": CERTIFICATE_SIGNING_REQUESTS.api_version,
        "kind": CERTIFICATE_SIGNING_REQUESTS.kind,
        "metadata": {
            **({"name": name} if name is not None else {"generateName": generate_name}),
            "labels": dict(labels),
        },
        "spec": {
            "request": base64.b64encode(request_pem).decode(),
            "signerName": SIGNER_KUBE_APISERVER_CLIENT,
            "usages": list(usages),
            "expirationSeconds": expiration_seconds,
        },
    }


def issued_certificate(csr: Mapping[str, Any]) -> tuple[str, str] | bytes | None:
    """What ``csr`` says now: its PEM certificate, a ``(condition, why)`` refusal, or None.

    A ``Denied`` or ``Failed`` condition with status True is a refusal (why = its reason and
    message); else ``status.certificate`` once the signer has written it; else pending.
    """
    status = objects.status(csr)
    for cond in status.get("conditions") or ():
        if cond.get("type") in ("Denied", "Failed") and cond.get("status", "True") == "True":
            why = f"{cond.get('reason') or cond['type']}: {cond.get('message') or ''}".rstrip(": ")
            return str(cond["type"]), why
    cert = status.get("certificate")
    return base64.b64decode(cert) if cert else None


def _check_certificate_matches(target: str, cert_pem: bytes, key_pem: bytes) -> None:
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
    except ValueError:
        raise CertificateRequestError(
            target, "status.certificate", "is not a PEM certificate"
        ) from None
    fmt = serialization.PublicFormat.SubjectPublicKeyInfo
    enc = serialization.Encoding.DER
    if cert.public_key().public_bytes(enc, fmt) != key.public_key().public_bytes(enc, fmt):
        raise CertificateRequestError(target, "status.certificate", "is not for the request's key")


async def wait_for_certificate(
    client: ApiClient,
    body: Mapping[str, Any],
    key_pem: bytes,
    *,
    timeout: float | None = None,
    on_created: Callable[[str], None] | None = None,
    late_hint: str = "",
    error: type[CertificateRequestError] = CertificateRequestError,
    replace: bool = False,
) -> bytes:
    """Create the CSR ``body`` with ``client`` and wait until its certificate is issued.

    Args:
        client: The identity that asks (its user becomes the CSR's ``spec.username``).
        body: The CertificateSigningRequest (``metadata.name`` or ``generateName``).
        replace: A CSR of ``body``'s name that exists already (the previous request of
            the same name: a CSR cannot be asked again) is deleted and this one created.
        key_pem: The private key the request was signed with (never sent).
        timeout: Seconds to wait for the certificate (None: until it comes).
        on_created: Called with the CSR's name once it exists.
        late_hint: Appended to the error when the certificate is not issued in time.
        error: The error type raised (a subclass names the caller's domain).

    Returns:
        The issued certificate, PEM.

    Raises:
        CertificateRequestError: (``error``) The CSR was denied or failed (the hub's
            reason), was deleted, was not issued within ``timeout``, or the issued
            certificate is not for ``key_pem``.
        KubeAPIError: The CSR could not be created or watched (e.g. 403 to the identity).
    """
    try:
        created = await create(client, CERTIFICATE_SIGNING_REQUESTS, dict(body))
    except AlreadyExistsError:
        if not replace:
            raise
        old = str(body["metadata"]["name"])
        _log.info("%s exists (an earlier request): replacing it", old)
        await delete(client, CERTIFICATE_SIGNING_REQUESTS, old)
        created = await create(client, CERTIFICATE_SIGNING_REQUESTS, dict(body))
    csr_name = str(created["metadata"]["name"])
    target = CERTIFICATE_SIGNING_REQUESTS.describe(None, csr_name)
    _log.info("created %s; waiting for it to be approved and signed", target)
    if on_created is not None:
        on_created(csr_name)
    changed = asyncio.Event()
    informer = Informer(
        client,
        CERTIFICATE_SIGNING_REQUESTS,
        field_selector=f"metadata.name={csr_name}",
        name=target,
    )
    informer.add_handler(lambda *_: changed.set())
    async with informer:
        await informer.wait_synced()
        try:
            async with asyncio.timeout(timeout):
                while True:
                    current = informer.get(csr_name)
                    if current is None and informer.failure is None:
                        raise error(target, "metadata", "deleted before it was issued")
                    outcome = issued_certificate(current or created)
                    if isinstance(outcome, tuple):
                        raise error(target, f"status.conditions[{outcome[0]}]", outcome[1])
                    if isinstance(outcome, bytes):
                        try:
                            _check_certificate_matches(target, outcome, key_pem)
                        except CertificateRequestError as exc:
                            raise error(exc.csr, exc.field, exc.problem) from None
                        return outcome
                    changed.clear()
                    await changed.wait()
        except TimeoutError:
            raise error(
                target, "status.certificate", f"not issued within {timeout} s{late_hint}"
            ) from None


async def approve(
    client: ApiClient,
    csr: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    now: dt.datetime,
) -> None:
    """Approve ``csr`` through its ``approval`` subresource (condition Approved=True).

    Args:
        client: An identity allowed to ``update certificatesigningrequests/approval`` and
            ``approve`` for the CSR's signer.
        csr: The CSR as read (its resourceVersion guards against a concurrent change).
        reason: The condition's reason (CamelCase).
        message: The condition's message.
        now: The condition's ``lastUpdateTime`` (timezone-aware).

    Raises:
        KubeAPIError: The approval was refused (403) or raced (409).
    """
    condition = {
        "type": "Approved",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastUpdateTime": format_time(now),
    }
    body = dict(csr)
    status = dict(objects.status(body))
    status["conditions"] = [*(status.get("conditions") or ()), condition]
    body["status"] = status
    name = str(csr["metadata"]["name"])
    await request(
        client,
        "PUT",
        CERTIFICATE_SIGNING_REQUESTS.path(None, name) + "/approval",
        body=body,
        target=CERTIFICATE_SIGNING_REQUESTS.describe(None, name),
    )
