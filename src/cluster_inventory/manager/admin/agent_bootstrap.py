"""An expiring bootstrap kubeconfig for member agents: ask to join, nothing else, for a while.

The hub admin's half of the join's first step (``docs/agent.md``, "Joining"): OCM's
``clusteradm get token`` hands a klusterlet a bootstrap token; kubeadm's bootstrap tokens
expire (24 h by default). Ours is a client certificate for
``CN=cluster-inventory:agent-bootstrap:HOLDER, O=cluster-inventory:agent-bootstrappers``,
issued through the CSR API by the hub's ``kubernetes.io/kube-apiserver-client`` signer with
``expirationSeconds``: the API server stops accepting it when it expires, whatever happens
to the file. The group is the one the chart binds to ``cluster-inventory:agent-bootstrap``
(create and read CSRs) and the one the cluster manager's approver trusts by default
(``ManagerConfig.agent_bootstrap_groups``), so the certificate can do nothing but ask for a
member agent's certificate, which is approved only for a member the hub accepted.

The admin approves the bootstrap CSR with their own rights (``approve`` on that signer); the
cluster manager's approver ignores it (it carries no ``cluster-inventory.dev/agent`` label).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509

from cluster_inventory import kube
from cluster_inventory.api.agents import check_member_name
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    AGENT_CSR_USAGES,
    LABEL_AGENT_BOOTSTRAP,
)
from cluster_inventory.kube import certificates

__all__ = [
    "BOOTSTRAP_USER_PREFIX",
    "DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS",
    "BootstrapCredential",
    "bootstrap_csr",
    "issue_bootstrap_kubeconfig",
]

#: User name prefix of a bootstrap certificate: ``<prefix><holder>``.
BOOTSTRAP_USER_PREFIX = "cluster-inventory:agent-bootstrap:"
#: Default life of a bootstrap certificate, seconds (one hour: long enough to install an
#: agent, short enough that a leaked file soon means nothing).
DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS = 3600


@dataclass(frozen=True)
class BootstrapCredential:
    """An issued bootstrap kubeconfig.

    Attributes:
        kubeconfig: The kubeconfig (key and certificate embedded; write it mode 0600).
        user: Its user name, ``cluster-inventory:agent-bootstrap:HOLDER``.
        groups: Its groups.
        expires: ``notAfter`` of the certificate (UTC): the API server refuses it from then.
        csr: Name of the CertificateSigningRequest that issued it.
    """

    kubeconfig: dict[str, Any] = field(repr=False)
    user: str
    groups: tuple[str, ...]
    expires: dt.datetime
    csr: str


def bootstrap_csr(
    holder: str, request_pem: bytes, *, expiration_seconds: int, group: str
) -> dict[str, Any]:
    """The CertificateSigningRequest of a bootstrap certificate for ``holder``.

    Args:
        holder: Who gets it (a DNS-1123 label, e.g. the site or member to be), in its CN.
        request_pem: The PEM request for ``CN=<BOOTSTRAP_USER_PREFIX><holder>, O=group``.
        expiration_seconds: ``spec.expirationSeconds``.
        group: The bootstrap group (the request's O).

    Raises:
        AgentNameError: ``holder`` is not a DNS-1123 label.
        ValueError: ``expiration_seconds`` is under 600 (the API's minimum), or ``group`` is
            empty.
    """
    check_member_name(holder, source="bootstrap credential", field="holder")
    if not group:
        raise ValueError("bootstrap credential: the group is empty")
    try:
        return certificates.client_certificate_signing_request(
            request_pem,
            generate_name=f"cluster-inventory-agent-bootstrap-{holder}-",
            labels={LABEL_AGENT_BOOTSTRAP: holder},
            expiration_seconds=expiration_seconds,
            usages=AGENT_CSR_USAGES,
        )
    except ValueError as exc:
        raise ValueError(f"bootstrap credential: {exc}") from None


async def issue_bootstrap_kubeconfig(
    admin: kube.ApiClient,
    hub: kube.ClusterConnection,
    holder: str,
    *,
    expiration_seconds: int = DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS,
    group: str = AGENT_BOOTSTRAP_GROUP,
    timeout: float = 60.0,
) -> BootstrapCredential:
    """Issue an expiring bootstrap kubeconfig for ``holder`` with the admin's rights.

    Makes a key here, creates the CSR (:func:`bootstrap_csr`), approves it (reason
    ``AgentBootstrapIssued``), waits for the hub's signer and builds a kubeconfig for
    ``hub``'s server with the key and certificate embedded.

    Args:
        admin: Hub client allowed to create CSRs and approve for the
            ``kubernetes.io/kube-apiserver-client`` signer.
        hub: How agents reach the hub (server, CA, proxy): the kubeconfig's cluster.
        holder: Who gets it (a DNS-1123 label).
        expiration_seconds: The certificate's life, seconds (at least 600).
        group: The bootstrap group (the cluster manager must trust it).
        timeout: Seconds to wait for the signer.

    Raises:
        AgentNameError / ValueError: As :func:`bootstrap_csr`.
        CertificateRequestError: The CSR was denied, failed, or not signed within ``timeout``
            (no signer running on the hub: kube-controller-manager's ``csrsigning``).
        KubeAPIError: The admin may not create or approve it.
    """
    key_pem = certificates.new_private_key()
    user = BOOTSTRAP_USER_PREFIX + holder
    body = bootstrap_csr(
        holder,
        certificates.certificate_request_pem(key_pem, common_name=user, organizations=[group]),
        expiration_seconds=expiration_seconds,
        group=group,
    )
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(
        certificates.wait_for_certificate(
            admin,
            body,
            key_pem,
            timeout=timeout,
            on_created=created.set_result,
            late_hint=" (does the hub run a signer for kubernetes.io/kube-apiserver-client?)",
        )
    )
    try:
        first: set[asyncio.Future[Any]] = {waiting, created}
        done, _ = await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        if created in done:
            csr = await kube.get(admin, kube.CERTIFICATE_SIGNING_REQUESTS, created.result())
            await certificates.approve(
                admin,
                csr,
                reason="AgentBootstrapIssued",
                message=f"bootstrap credential for {holder!r}, {expiration_seconds} s",
                now=dt.datetime.now(dt.UTC),
            )
        cert_pem = await waiting
    finally:
        waiting.cancel()
    cert = x509.load_pem_x509_certificate(cert_pem)
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hub", "cluster": hub.kubeconfig_cluster()}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": base64.b64encode(cert_pem).decode(),
                    "client-key-data": base64.b64encode(key_pem).decode(),
                },
            }
        ],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": user}}],
        "current-context": "hub",
    }
    return BootstrapCredential(
        kubeconfig=kubeconfig,
        user=user,
        groups=(group,),
        expires=cert.not_valid_after_utc,
        csr=created.result(),
    )
