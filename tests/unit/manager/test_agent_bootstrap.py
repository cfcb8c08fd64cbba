"""The bootstrap credential's CSR (manager/agent_bootstrap.py): shape and refusals."""

from __future__ import annotations

import base64

import pytest
from cryptography import x509

from cluster_inventory.api.agents import AgentNameError
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    LABEL_AGENT,
    LABEL_AGENT_BOOTSTRAP,
)
from cluster_inventory.kube import certificates
from cluster_inventory.manager.admin.agent_bootstrap import BOOTSTRAP_USER_PREFIX, bootstrap_csr


def test_bootstrap_csr_asks_the_client_signer_for_the_bootstrap_group() -> None:
    key = certificates.new_private_key()
    pem = certificates.certificate_request_pem(
        key, common_name=BOOTSTRAP_USER_PREFIX + "edge-7", organizations=[AGENT_BOOTSTRAP_GROUP]
    )
    body = bootstrap_csr("edge-7", pem, expiration_seconds=900, group=AGENT_BOOTSTRAP_GROUP)
    assert body["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert body["spec"]["expirationSeconds"] == 900
    assert body["spec"]["usages"] == ["digital signature", "client auth"]
    labels = body["metadata"]["labels"]
    # The cluster manager's approver watches only CSRs labelled as an agent's: not this one.
    assert labels == {LABEL_AGENT_BOOTSTRAP: "edge-7"} and LABEL_AGENT not in labels
    request = x509.load_pem_x509_csr(base64.b64decode(body["spec"]["request"]))
    assert request.subject.rfc4514_string() == (
        f"O={AGENT_BOOTSTRAP_GROUP},CN=cluster-inventory:agent-bootstrap:edge-7"
    )


@pytest.mark.parametrize(
    ("holder", "seconds", "group", "error", "says"),
    [
        ("Edge_7", 900, AGENT_BOOTSTRAP_GROUP, AgentNameError, "holder"),
        ("edge-7", 599, AGENT_BOOTSTRAP_GROUP, ValueError, "at least 600 .the CSR API"),
        ("edge-7", 900, "", ValueError, "group is empty"),
    ],
)
def test_bootstrap_csr_refuses_bad_input_naming_the_field(
    holder: str, seconds: int, group: str, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        bootstrap_csr(holder, b"", expiration_seconds=seconds, group=group)
