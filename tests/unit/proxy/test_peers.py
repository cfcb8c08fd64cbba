"""Which member an agent's credential may serve (the pure half of the proxy's trust)."""

from __future__ import annotations

import datetime as dt

import pytest

from cluster_inventory.proxy import AgentRefused, certificate_identity, claim_problem


def _cert(*rdns: tuple[str, str]) -> dict[str, object]:
    return {"subject": tuple(((k, v),) for k, v in rdns), "notAfter": "Dec  3 19:00:00 2026 GMT"}


def test_a_certificate_is_its_cn_and_its_organizations() -> None:
    user, groups, expires = certificate_identity(
        _cert(
            ("organizationName", "cluster-inventory:agents"),
            ("organizationName", "cluster-inventory:acceptance:edge-1:abcdefghijklmnop"),
            ("commonName", "cluster-inventory:agent:edge-1"),
        )
    )
    assert user == "cluster-inventory:agent:edge-1"
    assert groups == (
        "cluster-inventory:agents",
        "cluster-inventory:acceptance:edge-1:abcdefghijklmnop",
    )
    assert expires == dt.datetime(2026, 12, 3, 19, tzinfo=dt.UTC)


def test_a_certificate_without_a_cn_is_no_one() -> None:
    with pytest.raises(AgentRefused) as refused:
        certificate_identity(_cert(("organizationName", "system:masters")))
    assert refused.value.status == 401


@pytest.mark.parametrize(
    "user",
    [
        "cluster-inventory:agent:edge-2",  # another member's agent
        "cluster-inventory:agent-bootstrap:edge-1",  # its bootstrap credential
        "cluster-inventory:agent:edge-1x",
        "admin",  # a hub admin is not an agent either
        "system:serviceaccount:cluster-inventory-system:cluster-inventory-agent-edge-1",
    ],
)
def test_only_the_members_own_agent_identity_serves_it(user: str) -> None:
    assert claim_problem("edge-1", user) == "the credential is not member edge-1's agent identity"


def test_the_members_agent_serves_it() -> None:
    assert claim_problem("edge-1", "cluster-inventory:agent:edge-1") is None
