"""The bootstrap credential's CSR and hand-over (manager/agent_bootstrap.py): shape, refusals."""

from __future__ import annotations

import base64
import shlex

import pytest
from cryptography import x509

from cluster_inventory.api.agents import AgentNameError, new_acceptance_id
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    LABEL_AGENT,
    LABEL_AGENT_BOOTSTRAP,
)
from cluster_inventory.kube import certificates
from cluster_inventory.manager.admin.agent_bootstrap import agent_run_command, bootstrap_csr
from cluster_inventory.manager.admin.agents import Acceptance


def test_bootstrap_csr_asks_the_client_signer_for_one_acceptance_of_one_member() -> None:
    acceptance = Acceptance("ns", "edge-7", new_acceptance_id())
    key = certificates.new_private_key()
    pem = certificates.certificate_request_pem(
        key,
        common_name=acceptance.bootstrap_user,
        organizations=[AGENT_BOOTSTRAP_GROUP, acceptance.bootstrap_group],
    )
    body = bootstrap_csr("edge-7", pem, expiration_seconds=900)
    assert body["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert body["spec"]["expirationSeconds"] == 900
    assert body["spec"]["usages"] == ["digital signature", "client auth"]
    labels = body["metadata"]["labels"]
    # No agent label, and the admin files it: the cluster manager's approver leaves it alone.
    assert labels == {LABEL_AGENT_BOOTSTRAP: "edge-7"} and LABEL_AGENT not in labels
    request = x509.load_pem_x509_csr(base64.b64decode(body["spec"]["request"]))
    assert request.subject.rfc4514_string() == (
        f"O=cluster-inventory:bootstrap:edge-7:{acceptance.id},O={AGENT_BOOTSTRAP_GROUP},"
        "CN=cluster-inventory:agent-bootstrap:edge-7"
    )


@pytest.mark.parametrize(
    ("member", "seconds", "error", "says"),
    [
        ("Edge_7", 900, AgentNameError, "member"),
        ("edge-7", 599, ValueError, "at least 600 .the CSR API"),
    ],
)
def test_bootstrap_csr_refuses_bad_input_naming_the_field(
    member: str, seconds: int, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        bootstrap_csr(member, b"", expiration_seconds=seconds)


def test_the_agent_run_command_is_one_shell_line_naming_the_file() -> None:
    line = agent_run_command(
        "edge-7", "my dir/boot.kubeconfig", namespace="hub-ns", default_namespace="x"
    )
    assert shlex.split(line) == [
        "cluster-inventory",
        "agent",
        "run",
        "--name",
        "edge-7",
        "--bootstrap-kubeconfig",
        "my dir/boot.kubeconfig",
        "--namespace",
        "hub-ns",
    ]
    assert "--namespace" not in agent_run_command("e", "f", namespace="x", default_namespace="x")
