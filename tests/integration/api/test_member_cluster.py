"""What a cluster manager needs from a member: ClusterProperty and TokenRequest."""

from __future__ import annotations

import dataclasses

import pytest

from cluster_inventory import kube
from cluster_inventory.testing import Fleet

SERVICE_ACCOUNTS_TOKEN = "/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"


async def test_cluster_property_round_trip(fleet: Fleet) -> None:
    member = next(iter(fleet.members.values()))
    value = "us-east-1 ✓ " + "x" * 2000  # longer than a ClusterProfile property may be
    async with await member.client() as client:
        await kube.apply(
            client,
            kube.CLUSTER_PROPERTIES,
            {
                "metadata": {"name": "region.example.com"},
                "spec": {"value": value},
            },
            field_manager="test",
        )
        stored = await kube.get(client, kube.CLUSTER_PROPERTIES, "region.example.com")
        await kube.delete(client, kube.CLUSTER_PROPERTIES, "region.example.com")
        listed = await kube.list_objects(client, kube.CLUSTER_PROPERTIES)
    assert stored["spec"]["value"] == value
    assert stored["apiVersion"] == "about.k8s.io/v1beta1"
    assert "region.example.com" not in {i["metadata"]["name"] for i in listed["items"]}


async def test_token_request_token_authenticates_on_its_member(
    fleet: Fleet, test_namespace: str
) -> None:
    first, second = list(fleet.members.values())[:2]
    async with await first.client() as admin:
        try:
            await kube.create(
                admin,
                kube.SERVICE_ACCOUNTS,
                {"metadata": {"name": "consumer", "namespace": test_namespace}},
            )
        except kube.AlreadyExistsError:
            pass
        minted = await kube.request(
            admin,
            "POST",
            SERVICE_ACCOUNTS_TOKEN.format(ns=test_namespace, name="consumer"),
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 600},
            },
        )
    token = minted["status"]["token"]
    assert minted["status"]["expirationTimestamp"]
    as_token = dataclasses.replace(
        first.connection(), client_cert_data=None, client_key_data=None, token=token
    )
    async with await kube.new_client(as_token) as client:
        review = await kube.request(
            client,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        with pytest.raises(kube.ForbiddenError) as forbidden:
            await kube.list_objects(client, kube.SECRETS, test_namespace)
    assert review["status"]["userInfo"]["username"] == (
        f"system:serviceaccount:{test_namespace}:consumer"
    )
    assert forbidden.value.status == 403
    assert "consumer" in forbidden.value.message
    other = dataclasses.replace(
        second.connection(), client_cert_data=None, client_key_data=None, token=token
    )
    async with await kube.new_client(other) as client:
        with pytest.raises(kube.UnauthorizedError) as unauthorized:
            await kube.request(client, "GET", f"/api/v1/namespaces/{test_namespace}")
    assert unauthorized.value.status == 401


async def test_a_refused_secret_never_shows_its_values(fleet: Fleet, test_namespace: str) -> None:
    member = next(iter(fleet.members.values()))
    async with await member.client() as client:
        with pytest.raises(kube.KubeAPIError) as info:
            await kube.create(
                client,
                kube.SECRETS,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "Not_A_Valid_Name", "namespace": test_namespace},
                    "stringData": {"token": "hunter2-very-secret"},
                    "data": {"ca": "aHVudGVyMi1iYXNlNjQ="},
                },
            )
    text = str(info.value) + repr(info.value.causes)
    assert "Not_A_Valid_Name" in text
    assert "hunter2-very-secret" not in text
    assert "aHVudGVyMi1iYXNlNjQ=" not in text
