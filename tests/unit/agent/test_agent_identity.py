"""The agent's identity: its CSR, the rotation threshold, the state directory (docs/agent.md)."""

from __future__ import annotations

import base64
import datetime as dt
import stat
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import (
    AgentIdentity,
    IdentityStore,
    certificate_request_pem,
    certificate_signing_request,
    join_hint,
    needs_rotation,
    new_private_key,
    renewal_time,
)
from cluster_inventory.api.agents import (
    AgentNameError,
    acceptance_group,
    agent_user,
    csr_shape_problem,
    new_acceptance_id,
    read_csr_shape,
)
from cluster_inventory.api.constants import AGENT_GROUP, LABEL_AGENT
from tests.support.data.certificates import CA, T0, bootstrap_connection, certificate

ACC = new_acceptance_id()


def test_the_agent_csr_is_exactly_what_the_hub_approves() -> None:
    key = new_private_key()
    obj = certificate_signing_request(
        "member-1", ACC, certificate_request_pem("member-1", ACC, key)
    )
    assert obj["metadata"]["name"] == f"cluster-inventory-agent-member-1-{ACC}"
    assert obj["metadata"]["labels"] == {LABEL_AGENT: "member-1"}
    assert obj["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert obj["spec"]["usages"] == ["digital signature", "client auth"]
    assert obj["spec"]["expirationSeconds"] == 24 * 3600
    shape = read_csr_shape(obj)
    assert shape.common_name == agent_user("member-1")
    assert shape.organizations == (AGENT_GROUP, acceptance_group("member-1", ACC))
    assert shape.acceptance == ACC
    assert csr_shape_problem(shape) is None


def test_an_acceptance_id_is_16_base32_characters_and_never_repeats() -> None:
    ids = {new_acceptance_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 16 and set(i) <= set("abcdefghijklmnopqrstuvwxyz234567") for i in ids)
    for bad in ("", "A" * 16, "a" * 15, "1" * 16, None):
        with pytest.raises(AgentNameError, match="acceptance id"):
            certificate_request_pem("m", bad, new_private_key())  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "Member", "-a", "a" * 64, "a.b", "a_b"])
def test_a_bad_member_name_is_refused_naming_the_field(name: str) -> None:
    with pytest.raises(AgentNameError) as caught:
        certificate_request_pem(name, ACC, new_private_key())
    assert caught.value.field == "name"
    assert "DNS-1123" in str(caught.value)


def test_expiration_under_the_api_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 600"):
        certificate_signing_request("m", ACC, b"", expiration_seconds=599)


def test_rotation_is_due_when_20_to_25_percent_of_the_life_remains() -> None:
    cert = certificate(new_private_key(), agent_user("m"), T0, 100)
    due = renewal_time(cert)
    assert T0 + dt.timedelta(hours=75) <= due <= T0 + dt.timedelta(hours=80)
    assert renewal_time(cert) == due  # chosen once per certificate, not per call
    assert not needs_rotation(cert, T0 + dt.timedelta(hours=74, minutes=59))
    assert not needs_rotation(cert, due - dt.timedelta(seconds=1))
    assert needs_rotation(cert, due)
    assert needs_rotation(cert, T0 + dt.timedelta(hours=80))


def test_the_jitter_spreads_certificates_over_the_window() -> None:
    shares = set()
    for _ in range(20):
        cert = certificate(new_private_key(), agent_user("m"), T0, 100)
        shares.add(round((renewal_time(cert) - T0) / dt.timedelta(hours=1), 3))
    assert len(shares) > 10
    assert all(75 <= s <= 80 for s in shares)


def test_the_store_keeps_the_key_private_and_loads_it_back(tmp_path: Path) -> None:
    key = new_private_key()
    cert = certificate(key, agent_user("m"), dt.datetime.now(dt.UTC), 24)
    store = IdentityStore(tmp_path / "state")
    identity = AgentIdentity(name="m", key_pem=key, cert_pem=cert)
    assert "PRIVATE" not in repr(identity)
    store.save(identity, bootstrap_connection())
    assert stat.S_IMODE(store.key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert store.load("m") == identity
    assert store.load("other") is None  # a certificate for another member is not ours
    conn = kube.connection_from_kubeconfig(store.kubeconfig_path)
    assert conn.server == "https://127.0.0.1:6443"
    assert conn.client_cert_data == cert and conn.client_key_data == key
    assert conn.token is None and conn.ca_data == CA
    assert base64.b64encode(key).decode() not in store.kubeconfig_path.read_text()


def test_an_expired_or_missing_identity_is_not_loaded(tmp_path: Path) -> None:
    store = IdentityStore(tmp_path)
    assert store.load("m") is None
    key = new_private_key()
    old = certificate(key, agent_user("m"), T0, 1)
    store.save(AgentIdentity(name="m", key_pem=key, cert_pem=old), bootstrap_connection())
    assert store.load("m") is None


def test_the_identity_connection_drops_the_bootstrap_credential() -> None:
    key = new_private_key()
    cert = certificate(key, agent_user("m"), T0, 1)
    conn = AgentIdentity(name="m", key_pem=key, cert_pem=cert).connection(bootstrap_connection())
    assert conn.token is None and conn.client_cert_data == cert
    assert conn.server == "https://127.0.0.1:6443"


def test_a_401_during_the_join_says_when_the_bootstrap_certificate_expired() -> None:
    key = new_private_key()
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=3)).replace(microsecond=0)
    cert = certificate(key, "cluster-inventory:agent-bootstrap:m", start, 1)
    expired = kube.ClusterConnection(
        server="https://hub", client_cert_data=cert, client_key_data=key
    )
    refused = kube.UnauthorizedError(status=401, reason="Unauthorized", message="Unauthorized")
    hint = join_hint(refused, expired)
    assert f"expired at {(start + dt.timedelta(hours=1)).isoformat()}" in hint
    fresh = certificate(key, "x", dt.datetime.now(dt.UTC), 1)
    valid = kube.ClusterConnection(
        server="https://hub", client_cert_data=fresh, client_key_data=key
    )
    assert "expired" not in join_hint(refused, valid)
