"""An expiring bootstrap kubeconfig for one member's agent: ask to join once, for a while.

The hub admin's half of the join's first step (``docs/agent.md``, "Joining"): OCM's
``clusteradm get token`` hands a klusterlet a bootstrap token; kubeadm's bootstrap tokens
expire (24 h by default). Ours is bound to one member and one acceptance of it: a client
certificate for ``CN=cluster-inventory:agent-bootstrap:NAME`` in the groups
``cluster-inventory:agent-bootstrappers`` and ``cluster-inventory:bootstrap:NAME:ACC``
(``ACC``: the member's current acceptance, read from its registration Secret, so the member
must be accepted first), issued through the CSR API by the hub's
``kubernetes.io/kube-apiserver-client`` signer with ``expirationSeconds``: the API server
stops accepting it when it expires, whatever happens to the file. The hub's RBAC for the
acceptance (``manager accept``) lets that group create CSRs and read the acceptance's one
CSR, nothing else; the cluster manager's approver approves its first agent CSR for ``NAME``
and that acceptance only, and no bootstrap request once the agent has joined. After
``manager reject NAME`` it authorises nothing, and a later acceptance is another group.

The admin approves the bootstrap CSR with their own rights (``approve`` on that signer); the
cluster manager's approver ignores it (no ``cluster-inventory.dev/agent`` label, and the
admin is none of its identities).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cryptography import x509

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api.agents import check_member_name
from cluster_inventory.api.constants import AGENT_CSR_USAGES, LABEL_AGENT_BOOTSTRAP
from cluster_inventory.kube import certificates
from cluster_inventory.kubeconfig import one_cluster_document
from cluster_inventory.manager.admin.agents import Acceptance

if TYPE_CHECKING:
    from cluster_inventory.shapes import RawKubeconfig

__all__ = [
    "DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS",
    "BootstrapCredential",
    "agent_run_command",
    "bootstrap_csr",
    "issue_bootstrap_kubeconfig",
]

#: Default life of a bootstrap certificate, seconds (one hour: long enough to install an
#: agent, short enough that a leaked file soon means nothing).
DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS = 3600


@dataclass(frozen=True)
class BootstrapCredential:
    """An issued bootstrap kubeconfig.

    Attributes:
        kubeconfig: The kubeconfig (key and certificate embedded; write it mode 0600).
        acceptance: The member's acceptance it joins.
        user: Its user name, ``cluster-inventory:agent-bootstrap:NAME``.
        groups: Its groups.
        expires: ``notAfter`` of the certificate (UTC): the API server refuses it from then.
        csr: Name of the CertificateSigningRequest that issued it.
    """

    kubeconfig: RawKubeconfig = field(repr=False)
    acceptance: Acceptance
    user: str
    groups: tuple[str, ...]
    expires: dt.datetime
    csr: str


def bootstrap_csr(member: str, request_pem: bytes, *, expiration_seconds: int) -> dict[str, Any]:
    """The CertificateSigningRequest of a bootstrap certificate for member ``member``.

    Args:
        member: The member it joins (a DNS-1123 label), in its CN.
        request_pem: The PEM request (:func:`~.agents.Acceptance` ``bootstrap_user`` and
            ``bootstrap_group``, and the bootstrap group).
        expiration_seconds: ``spec.expirationSeconds``.

    Raises:
        AgentNameError: ``member`` is not a DNS-1123 label.
        ValueError: ``expiration_seconds`` is under 600 (the API's minimum).
    """
    check_member_name(member, source="bootstrap credential", field="member")
    try:
        return certificates.client_certificate_signing_request(
            request_pem,
            generate_name=f"cluster-inventory-agent-bootstrap-{member}-",
            labels={LABEL_AGENT_BOOTSTRAP: member},
            expiration_seconds=expiration_seconds,
            usages=AGENT_CSR_USAGES,
        )
    except ValueError as exc:
        raise ValueError(f"bootstrap credential: {exc}") from None


async def issue_bootstrap_kubeconfig(
    admin: kube.ApiClient,
    hub: kube.ClusterConnection,
    acceptance: Acceptance,
    *,
    expiration_seconds: int = DEFAULT_BOOTSTRAP_EXPIRATION_SECONDS,
    timeout: float = 60.0,
) -> BootstrapCredential:
    """Issue an expiring bootstrap kubeconfig for one acceptance, with the admin's rights.

    Makes a key here, creates the CSR (:func:`bootstrap_csr`), approves it (reason
    ``AgentBootstrapIssued``), waits for the hub's signer and builds a kubeconfig for
    ``hub``'s server with the key and certificate embedded.

    Args:
        admin: Hub client allowed to create CSRs and approve for the
            ``kubernetes.io/kube-apiserver-client`` signer.
        hub: How agents reach the hub (server, CA, proxy): the kubeconfig's cluster.
        acceptance: The member's current acceptance
            (:func:`~.agents.current_acceptance`).
        expiration_seconds: The certificate's life, seconds (at least 600).
        timeout: Seconds to wait for the signer.

    Raises:
        AgentNameError / ValueError: As :func:`bootstrap_csr`.
        CertificateRequestError: The CSR was denied, failed, or not signed within ``timeout``
            (no signer running on the hub: kube-controller-manager's ``csrsigning``).
        KubeAPIError: The admin may not create or approve it.
    """
    key_pem = certificates.new_private_key()
    user = acceptance.bootstrap_user
    groups = acceptance.bootstrap_groups
    body = bootstrap_csr(
        acceptance.name,
        certificates.certificate_request_pem(key_pem, common_name=user, organizations=groups),
        expiration_seconds=expiration_seconds,
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
                message=(
                    f"bootstrap credential of member {acceptance.name!r} (its current "
                    f"acceptance), {expiration_seconds} s"
                ),
                now=utcnow(),
            )
        cert_pem = await waiting
    finally:
        if not waiting.done():  # its informer stopped before the caller closes the client
            await kube.cancel_and_wait(waiting)
    cert = x509.load_pem_x509_certificate(cert_pem)
    kubeconfig = one_cluster_document(
        name="hub",
        cluster=hub.kubeconfig_cluster(),
        user={
            "client-certificate-data": base64.b64encode(cert_pem).decode(),
            "client-key-data": base64.b64encode(key_pem).decode(),
        },
        user_name=user,
    )
    return BootstrapCredential(
        kubeconfig=kubeconfig,
        acceptance=acceptance,
        user=user,
        groups=groups,
        expires=cert.not_valid_after_utc,
        csr=created.result(),
    )


def agent_run_command(
    member: str, bootstrap_file: str, *, namespace: str, default_namespace: str
) -> str:
    """The ``cluster-inventory agent run`` line to hand to the member's owner.

    Args:
        member: The member name.
        bootstrap_file: Where the bootstrap kubeconfig was written (as given).
        namespace: The cluster manager's namespace on the hub.
        default_namespace: The agent's default ``--namespace`` (left out when equal).

    Returns:
        One shell line (values quoted where the shell needs it); the member's own
        kubeconfig is left to the owner (``--kubeconfig``, or the agent's in-cluster one).
    """
    argv = ["cluster-inventory", "agent", "run", "--name", member, "--bootstrap-kubeconfig"]
    argv.append(bootstrap_file)
    if namespace != default_namespace:
        argv += ["--namespace", namespace]
    return shlex.join(argv)
