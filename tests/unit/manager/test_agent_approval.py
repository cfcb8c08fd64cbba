"""Which agent CSRs the cluster manager approves, deletes or leaves (docs/agent.md,
"Who can obtain which certificate"): one decision, :func:`csr_decision`, as units."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.agent import certificate_request_pem, certificate_signing_request
from cluster_inventory.api.agents import (
    CsrShape,
    acceptance_group,
    agent_csr_name,
    bootstrap_acceptance_group,
    new_acceptance_id,
    read_csr_shape,
)
from cluster_inventory.api.constants import AGENT_BOOTSTRAP_GROUP, AGENT_GROUP
from cluster_inventory.manager import ManagerConfig, agent_registration_secret
from cluster_inventory.manager.rules.agent_approval import (
    MAX_PENDING_PER_REQUESTER,
    STALE_AFTER,
    CsrAction,
    Decision,
    csr_decision,
    is_pending,
    requester_of,
)
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.manager.rules.registration import (
    RegistrationError,
    acceptance_of,
    is_agent_registration,
)
from cluster_inventory.manager.sources.secrets import SecretRegistrationSource

KEY = ec.generate_private_key(ec.SECP256R1())
KEY_PEM = KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
ACC = new_acceptance_id()
OLD = new_acceptance_id()
BOOT = {
    "username": "cluster-inventory:agent-bootstrap:m1",
    "groups": [AGENT_BOOTSTRAP_GROUP, bootstrap_acceptance_group("m1", ACC)],
}
AGENT = {
    "username": "cluster-inventory:agent:m1",
    "groups": [AGENT_GROUP, acceptance_group("m1", ACC)],
}


def _csr(
    member: str = "m1", acceptance: str = ACC, *, request: bytes | None = None, **spec: Any
) -> dict[str, Any]:
    obj = certificate_signing_request(
        member, acceptance, certificate_request_pem(member, acceptance, KEY_PEM)
    )
    if request is not None:
        obj["spec"]["request"] = base64.b64encode(request).decode()
    obj["spec"].update({**BOOT, **spec})
    return obj


def _request(*attrs: x509.NameAttribute, san: bool = False) -> bytes:
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(list(attrs)))
    if san:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("evil.example")]), critical=False
        )
    return builder.sign(KEY, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _decide(
    shape: CsrShape,
    *,
    current: str | None = ACC,
    joined: bool = False,
    rank: int = 1,
    age: float | None = 1.0,
) -> Decision:
    return csr_decision(
        shape,
        current=current,
        joined=joined,
        rank=rank,
        age=age,
        max_seconds=86400,
        namespace="cluster-inventory-system",
    )


def _reason(csr: dict[str, Any], **kwargs: Any) -> tuple[CsrAction, str]:
    decision = _decide(read_csr_shape(csr), **kwargs)
    return decision.action, decision.reason


def test_the_first_csr_of_the_current_acceptance_from_its_bootstrap_credential_is_approved() -> (
    None
):
    assert _reason(_csr()) == (CsrAction.APPROVE, "AgentAccepted")


def test_a_rotation_by_the_agent_of_the_current_acceptance_is_approved() -> None:
    assert _reason(_csr(**AGENT)) == (CsrAction.APPROVE, "AgentRotation")
    assert _reason(_csr(**AGENT), joined=True) == (CsrAction.APPROVE, "AgentRotation")


def test_a_bootstrap_credential_joins_once() -> None:
    assert _reason(_csr(), joined=True) == (CsrAction.DELETE, "AlreadyJoined")


def test_another_members_identities_are_deleted_even_with_the_victims_acceptance() -> None:
    # The attacker knows member m1's acceptance id and holds m2's bootstrap or agent identity.
    other_boot = {
        "username": "cluster-inventory:agent-bootstrap:m2",
        "groups": [AGENT_BOOTSTRAP_GROUP, bootstrap_acceptance_group("m2", ACC)],
    }
    other_agent = {
        "username": "cluster-inventory:agent:m2",
        "groups": [AGENT_GROUP, acceptance_group("m2", ACC), AGENT_BOOTSTRAP_GROUP],
    }
    for spec in (other_boot, other_agent):
        assert _reason(_csr(**spec)) == (CsrAction.DELETE, "WrongAgent")


def test_an_identity_of_an_earlier_acceptance_is_refused() -> None:
    old_boot = {
        "username": "cluster-inventory:agent-bootstrap:m1",
        "groups": [AGENT_BOOTSTRAP_GROUP, bootstrap_acceptance_group("m1", OLD)],
    }
    old_agent = {
        "username": "cluster-inventory:agent:m1",
        "groups": [AGENT_GROUP, acceptance_group("m1", OLD)],
    }
    for spec in (old_boot, old_agent):
        # asking for the current acceptance with an old identity
        assert _reason(_csr(**spec)) == (CsrAction.DELETE, "WrongAcceptance")
        # asking for its own, old acceptance: stale (after a grace, for a cache that lags)
        assert _reason(_csr(acceptance=OLD, **spec)) == (CsrAction.WAIT, "NotAccepted")
        stale = _reason(_csr(acceptance=OLD, **spec), age=STALE_AFTER)
        assert stale == (CsrAction.DELETE, "StaleAcceptance")


def test_a_member_not_accepted_waits_then_its_csr_is_deleted() -> None:
    shape = read_csr_shape(_csr())
    waiting = _decide(shape, current=None, age=10)
    assert (waiting.action, waiting.reason) == (CsrAction.WAIT, "NotAccepted")
    assert waiting.retry_after == pytest.approx(STALE_AFTER - 10)
    assert _decide(shape, current=None, age=None).action is CsrAction.DELETE


def test_a_stranger_with_the_label_is_left_pending_and_the_hubs_other_csrs_ignored() -> None:
    csr = _csr(username="admin", groups=["system:masters"])
    assert _reason(csr) == (CsrAction.WAIT, "NotAgentIdentity")
    assert _decide(read_csr_shape(csr)).retry_after is None
    kubelet = _csr(username="system:node:n1", groups=["system:nodes"])
    kubelet["metadata"]["labels"] = {}
    assert _reason(kubelet) == (CsrAction.IGNORE, "")


def test_each_requester_has_its_own_cap() -> None:
    shape = read_csr_shape(_csr())
    assert _decide(shape, rank=MAX_PENDING_PER_REQUESTER).action is CsrAction.APPROVE
    past = _decide(shape, rank=MAX_PENDING_PER_REQUESTER + 1)
    assert (past.action, past.reason) == (CsrAction.DELETE, "TooManyPending")


def test_the_requested_duration_is_bounded() -> None:
    assert _reason(_csr(expirationSeconds=86400)) == (CsrAction.APPROVE, "AgentAccepted")
    assert _reason(_csr(expirationSeconds=86401)) == (CsrAction.DELETE, "DurationTooLong")
    no_duration = _csr()
    del no_duration["spec"]["expirationSeconds"]
    assert _reason(no_duration) == (CsrAction.DELETE, "DurationTooLong")


def test_a_bootstrap_name_without_the_bootstrap_group_is_deleted() -> None:
    csr = _csr(groups=[bootstrap_acceptance_group("m1", ACC)])
    assert _reason(csr) == (CsrAction.DELETE, "NotBootstrapIdentity")


CN = x509.NameAttribute(NameOID.COMMON_NAME, "cluster-inventory:agent:m1")
ORG = x509.NameAttribute(NameOID.ORGANIZATION_NAME, AGENT_GROUP)
ACC_ORG = x509.NameAttribute(NameOID.ORGANIZATION_NAME, acceptance_group("m1", ACC))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"signerName": "kubernetes.io/kube-apiserver-client-kubelet"}, "signerName"),
        ({"usages": ["client auth", "digital signature"]}, "usages"),
        ({"usages": ["digital signature", "client auth", "server auth"]}, "usages"),
        (
            {
                "request": _request(
                    x509.NameAttribute(NameOID.COMMON_NAME, "cluster-inventory:agent:m2"),
                    ORG,
                    ACC_ORG,
                )
            },
            "CN",
        ),
        ({"request": _request(CN, ORG)}, "exactly"),
        ({"request": _request(CN, ACC_ORG)}, "exactly"),
        (
            {
                "request": _request(
                    CN,
                    ORG,
                    ACC_ORG,
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                )
            },
            "exactly",
        ),
        (
            {"request": _request(CN, ORG, ACC_ORG, x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"))},
            "other than CN and O",
        ),
        ({"request": _request(CN, ORG, ACC_ORG, san=True)}, "extensions"),
        ({"request": b"not a request"}, "PEM"),
    ],
)
def test_anything_but_the_exact_agent_request_is_deleted(change: dict[str, Any], why: str) -> None:
    request = change.pop("request", None)
    decision = _decide(read_csr_shape(_csr(request=request, **change)))
    assert (decision.action, decision.reason) == (CsrAction.DELETE, "InvalidAgentRequest")
    assert why in decision.message


def test_the_csr_name_is_the_acceptances_one_name() -> None:
    csr = _csr()
    assert csr["metadata"]["name"] == agent_csr_name("m1", ACC)
    csr["metadata"]["name"] = "cluster-inventory-agent-m1-x7k2p"
    assert _reason(csr) == (CsrAction.DELETE, "InvalidAgentRequest")


def test_a_csr_without_the_member_label_from_our_identity_is_deleted() -> None:
    csr = _csr()
    csr["metadata"]["labels"] = {}
    shape = read_csr_shape(csr)
    assert _reason(csr) == (CsrAction.DELETE, "InvalidAgentRequest")
    assert _decide(replace(shape, member="Not_A_Label")).action is CsrAction.DELETE


def test_the_messages_never_carry_the_acceptance_id() -> None:
    for csr in (_csr(), _csr(**AGENT)):
        for kwargs in ({"joined": True}, {"current": OLD}, {"current": OLD, "age": 999.0}, {}):
            assert ACC not in _decide(read_csr_shape(csr), **kwargs).message


@given(
    username=st.sampled_from(
        [
            "cluster-inventory:agent:m1",
            "cluster-inventory:agent:m2",
            "cluster-inventory:agent-bootstrap:m1",
            "cluster-inventory:agent-bootstrap:m2",
            "admin",
        ]
    ),
    groups=st.lists(
        st.sampled_from(
            [
                AGENT_GROUP,
                AGENT_BOOTSTRAP_GROUP,
                acceptance_group("m1", ACC),
                acceptance_group("m1", OLD),
                bootstrap_acceptance_group("m1", ACC),
                bootstrap_acceptance_group("m2", ACC),
                acceptance_group("m2", ACC),
                "system:masters",
            ]
        ),
        max_size=4,
    ),
    joined=st.booleans(),
)
def test_only_m1s_own_identities_of_its_current_acceptance_ever_get_m1s_certificate(
    username: str, groups: list[str], joined: bool
) -> None:
    decision = _decide(read_csr_shape(_csr(username=username, groups=groups)), joined=joined)
    if decision.action is CsrAction.APPROVE:
        # Never a requester that carries groups of both kinds (no hub certificate has both).
        agent_kind = {AGENT_GROUP, acceptance_group("m1", ACC), acceptance_group("m1", OLD)}
        agent_kind.add(acceptance_group("m2", ACC))
        if username == "cluster-inventory:agent:m1":
            assert {AGENT_GROUP, acceptance_group("m1", ACC)} <= set(groups)
            assert not {AGENT_BOOTSTRAP_GROUP, bootstrap_acceptance_group("m1", ACC)} & set(groups)
            assert bootstrap_acceptance_group("m2", ACC) not in groups
        else:
            assert username == "cluster-inventory:agent-bootstrap:m1" and not joined
            assert {AGENT_BOOTSTRAP_GROUP, bootstrap_acceptance_group("m1", ACC)} <= set(groups)
            assert not agent_kind & set(groups)


def test_a_requester_with_groups_of_both_kinds_is_nobodys_acceptance() -> None:
    # The counterexample Hypothesis found: a bootstrap identity also carrying an agent
    # acceptance group (of an old acceptance) was approved as m1's bootstrap.
    groups = (
        AGENT_BOOTSTRAP_GROUP,
        acceptance_group("m1", OLD),
        bootstrap_acceptance_group("m1", ACC),
    )
    mixed = requester_of("cluster-inventory:agent-bootstrap:m1", groups)
    assert mixed is not None and mixed.acceptance is None
    csr = _csr(username="cluster-inventory:agent-bootstrap:m1", groups=list(groups))
    assert _decide(read_csr_shape(csr), joined=False).action is not CsrAction.APPROVE
    agent = requester_of(
        "cluster-inventory:agent:m1",
        (AGENT_GROUP, acceptance_group("m1", ACC), bootstrap_acceptance_group("m1", ACC)),
    )
    assert agent is not None and agent.acceptance is None


def test_requesters_are_our_identities_only() -> None:
    assert requester_of("admin", ("system:masters",)) is None
    agent = requester_of("cluster-inventory:agent:m1", (AGENT_GROUP, acceptance_group("m1", ACC)))
    assert agent is not None and (agent.kind, agent.member, agent.acceptance) == (
        "agent",
        "m1",
        ACC,
    )
    two = requester_of(
        "cluster-inventory:agent:m1", (acceptance_group("m1", ACC), acceptance_group("m1", OLD))
    )
    assert two is not None and two.acceptance is None


def test_pending_means_no_decision_and_no_certificate() -> None:
    assert is_pending(_csr())
    assert not is_pending({"status": {"conditions": [{"type": "Approved", "status": "True"}]}})
    assert not is_pending({"status": {"conditions": [{"type": "Denied", "status": "True"}]}})
    assert not is_pending({"status": {"certificate": "Zm9v"}})


def test_the_certificate_bound_is_at_least_the_apis_minimum() -> None:
    with pytest.raises(ValueError, match="agent_certificate_max_seconds"):
        ManagerConfig(agent_certificate_max_seconds=599)


def test_the_agent_registration_secret_has_the_mode_the_acceptance_and_no_kubeconfig() -> None:
    secret = agent_registration_secret("m1", "ns", ["prod", "dev"], acceptance=ACC)
    assert is_agent_registration(secret)
    assert acceptance_of(secret) == ACC
    assert "data" not in secret
    assert secret["metadata"]["annotations"]["cluster-inventory.dev/clustersets"] == "prod,dev"
    with pytest.raises(RegistrationError) as caught:
        agent_registration_secret("M1", "ns", ["prod"])
    assert caught.value.field == "metadata.name"
    with pytest.raises(RegistrationError, match="names no cluster set"):
        agent_registration_secret("m1", "ns", [])
    with pytest.raises(RegistrationError, match="acceptance id"):
        agent_registration_secret("m1", "ns", ["prod"], acceptance="short")
    with pytest.raises(RegistrationError, match="at most 30 characters"):
        agent_registration_secret("m" * 31, "ns", ["prod"])
    assert acceptance_of(agent_registration_secret("m" * 30, "ns", ["prod"])) is None


def test_the_secret_source_gives_an_agent_registration_its_pool_key_and_no_error() -> None:
    source = SecretRegistrationSource(object(), "ns")  # type: ignore[arg-type]
    secret = agent_registration_secret("m1", "ns", ["prod"], display_name="Edge 1", acceptance=ACC)
    secret["metadata"].update(uid="u1", resourceVersion="1")
    [informer] = source.informer.informers
    informer._apply("ADDED", secret)
    good, bad = source.snapshot()
    assert bad == []
    reg = good["m1"]
    assert reg.connection == AgentMemberKey("ns", "m1")
    assert (reg.clustersets, reg.display_name) == (("prod",), "Edge 1")
