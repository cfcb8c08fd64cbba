"""Which agent CSRs the cluster manager approves (docs/agent.md, "Joining" step 2)."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster_inventory.agent import certificate_request_pem, certificate_signing_request
from cluster_inventory.api.agents import CsrShape, read_csr_shape
from cluster_inventory.api.constants import AGENT_BOOTSTRAP_GROUP, AGENT_GROUP
from cluster_inventory.manager import ManagerConfig, agent_registration_secret
from cluster_inventory.manager.controllers.agent_approver import (
    MAX_PENDING,
    approval_problem,
    is_pending,
)
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.manager.rules.registration import RegistrationError, is_agent_registration
from cluster_inventory.manager.sources.secrets import SecretRegistrationSource

KEY = ec.generate_private_key(ec.SECP256R1())
KEY_PEM = KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)


def _csr(member: str = "m1", *, request: bytes | None = None, **spec: Any) -> dict[str, Any]:
    obj = certificate_signing_request(member, certificate_request_pem(member, KEY_PEM))
    obj["metadata"]["name"] = "cluster-inventory-agent-m1-x7k2p"
    if request is not None:
        obj["spec"]["request"] = base64.b64encode(request).decode()
    obj["spec"].update({"username": "boot", "groups": [AGENT_BOOTSTRAP_GROUP], **spec})
    return obj


def _request(*attrs: x509.NameAttribute, san: bool = False) -> bytes:
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(list(attrs)))
    if san:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("evil.example")]), critical=False
        )
    return builder.sign(KEY, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _problem(shape: CsrShape, *, accepted: bool = True, pending: int = 1) -> str | None:
    found = approval_problem(
        shape,
        accepted=accepted,
        pending=pending,
        bootstrap_groups=(AGENT_BOOTSTRAP_GROUP,),
        bootstrap_users=("system:serviceaccount:ns:bootstrap",),
        namespace="cluster-inventory-system",
    )
    return None if found is None else found[0]


def test_an_accepted_members_csr_from_a_bootstrap_identity_is_approved() -> None:
    assert _problem(read_csr_shape(_csr())) is None


def test_a_bootstrap_user_and_the_agent_itself_may_ask() -> None:
    user = _csr(username="system:serviceaccount:ns:bootstrap", groups=["system:authenticated"])
    assert _problem(read_csr_shape(user)) is None
    rotation = _csr(username="cluster-inventory:agent:m1", groups=[AGENT_GROUP])
    assert _problem(read_csr_shape(rotation)) is None


def test_another_members_agent_is_refused_even_in_a_bootstrap_group() -> None:
    csr = _csr(username="cluster-inventory:agent:m2", groups=[AGENT_GROUP, AGENT_BOOTSTRAP_GROUP])
    assert _problem(read_csr_shape(csr)) == "WrongAgent"


def test_a_stranger_is_refused() -> None:
    csr = _csr(username="admin", groups=["system:masters"])
    assert _problem(read_csr_shape(csr)) == "NotBootstrapIdentity"


def test_a_member_not_accepted_waits() -> None:
    assert _problem(read_csr_shape(_csr()), accepted=False) == "NotAccepted"


def test_more_than_ten_pending_approves_none() -> None:
    shape = read_csr_shape(_csr())
    assert _problem(shape, pending=MAX_PENDING) is None
    assert _problem(shape, pending=MAX_PENDING + 1) == "TooManyPending"


CN = x509.NameAttribute(NameOID.COMMON_NAME, "cluster-inventory:agent:m1")
ORG = x509.NameAttribute(NameOID.ORGANIZATION_NAME, AGENT_GROUP)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"signerName": "kubernetes.io/kube-apiserver-client-kubelet"}, "signerName"),
        ({"usages": ["client auth", "digital signature"]}, "usages"),
        ({"usages": ["digital signature", "client auth", "server auth"]}, "usages"),
        (
            {
                "request": _request(
                    x509.NameAttribute(NameOID.COMMON_NAME, "cluster-inventory:agent:m2"), ORG
                )
            },
            "CN",
        ),
        ({"request": _request(CN)}, "exactly"),
        (
            {
                "request": _request(
                    CN, ORG, x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters")
                )
            },
            "exactly",
        ),
        ({"request": _request(CN, ORG, x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"))}, "exactly"),
        ({"request": _request(CN, ORG, san=True)}, "extensions"),
        ({"request": b"not a request"}, "PEM"),
    ],
)
def test_anything_but_the_exact_agent_request_is_refused(change: dict[str, Any], why: str) -> None:
    request = change.pop("request", None)
    shape = read_csr_shape(_csr(request=request, **change))
    found = approval_problem(
        shape,
        accepted=True,
        pending=1,
        bootstrap_groups=(AGENT_BOOTSTRAP_GROUP,),
        bootstrap_users=(),
        namespace="ns",
    )
    assert found is not None and found[0] == "InvalidAgentRequest"
    assert why in found[1]


def test_a_csr_without_the_member_label_is_refused() -> None:
    csr = _csr()
    csr["metadata"]["labels"] = {}
    shape = read_csr_shape(csr)
    assert _problem(shape) == "InvalidAgentRequest"
    assert _problem(replace(shape, member="Not_A_Label")) == "InvalidAgentRequest"


def test_pending_means_no_decision_and_no_certificate() -> None:
    assert is_pending(_csr())
    assert not is_pending({"status": {"conditions": [{"type": "Approved", "status": "True"}]}})
    assert not is_pending({"status": {"conditions": [{"type": "Denied", "status": "True"}]}})
    assert not is_pending({"status": {"certificate": "Zm9v"}})


def test_the_bootstrap_groups_may_not_include_every_agent() -> None:
    with pytest.raises(ValueError, match="agent_bootstrap_groups"):
        ManagerConfig(agent_bootstrap_groups=(AGENT_GROUP,))


def test_the_agent_registration_secret_has_the_mode_and_no_kubeconfig() -> None:
    secret = agent_registration_secret("m1", "ns", ["prod", "dev"])
    assert is_agent_registration(secret)
    assert "data" not in secret
    assert secret["metadata"]["annotations"]["cluster-inventory.dev/clustersets"] == "prod,dev"
    with pytest.raises(RegistrationError) as caught:
        agent_registration_secret("M1", "ns", ["prod"])
    assert caught.value.field == "metadata.name"
    with pytest.raises(RegistrationError, match="names no cluster set"):
        agent_registration_secret("m1", "ns", [])


def test_the_secret_source_gives_an_agent_registration_its_pool_key_and_no_error() -> None:
    source = SecretRegistrationSource(object(), "ns")  # type: ignore[arg-type]
    secret = agent_registration_secret("m1", "ns", ["prod"], display_name="Edge 1")
    secret["metadata"].update(uid="u1", resourceVersion="1")
    [informer] = source.informer.informers
    informer._apply("ADDED", secret)
    good, bad = source.snapshot()
    assert bad == []
    reg = good["m1"]
    assert reg.connection == AgentMemberKey("ns", "m1")
    assert (reg.clustersets, reg.display_name) == (("prod",), "Edge 1")
