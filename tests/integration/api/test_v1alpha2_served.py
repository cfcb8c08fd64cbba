"""multicluster.x-k8s.io/v1alpha2 is served beside v1alpha1 (stored), with upstream's rules."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane

MANAGER = "conformance-test"
V2_PROFILES = dataclasses.replace(kube.CLUSTER_PROFILES, version="v1alpha2")
V2_DECISIONS = dataclasses.replace(kube.PLACEMENT_DECISIONS, version="v1alpha2")
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()


def _profile(name: str, namespace: str, manager: str = MANAGER) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"displayName": name.title(), "clusterManager": {"name": manager}},
    }


def _provider(name: str = "secretreader", **cluster: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": {"server": "https://member.example.com:6443", "certificate-authority-data": CA}
        | cluster,
    }


def _status(*providers: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": {"kubernetes": "v1.36.3"},
        "properties": [{"name": "region", "value": "eu-west-1"}],
        "accessProviders": list(providers),
    }


async def test_both_versions_are_served_and_listable(
    hub: ControlPlane, test_namespace: str
) -> None:
    async with await hub.client() as client:
        group = await kube.request(client, "GET", "/apis/multicluster.x-k8s.io")
        versions = {v["version"] for v in group["versions"]}
        assert versions == {"v1alpha1", "v1alpha2"}
        assert group["preferredVersion"]["version"] == "v1alpha2"
        for resource in (V2_PROFILES, V2_DECISIONS, kube.CLUSTER_PROFILES):
            listed = await kube.list_objects(client, resource, test_namespace)
            assert listed["items"] == []
        resources = await kube.request(client, "GET", "/apis/multicluster.x-k8s.io/v1alpha2")
        by_name = {r["name"]: r for r in resources["resources"]}
        assert by_name["clusterprofiles"]["namespaced"] is True
        assert "multicluster" in by_name["clusterprofiles"]["categories"]


@pytest.mark.parametrize(("writer", "reader"), [("v1alpha1", "v1alpha2"), ("v1alpha2", "v1alpha1")])
async def test_a_profile_written_through_one_version_reads_the_same_through_the_other(
    hub: ControlPlane, test_namespace: str, writer: str, reader: str
) -> None:
    write = dataclasses.replace(kube.CLUSTER_PROFILES, version=writer)
    read = dataclasses.replace(kube.CLUSTER_PROFILES, version=reader)
    name = f"from-{writer}"
    extension = {"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": name}}
    async with await hub.client() as client:
        await kube.apply(client, write, _profile(name, test_namespace), field_manager=MANAGER)
        body = {
            **_profile(name, test_namespace),
            "status": _status(_provider(extensions=[extension])),
        }
        await kube.apply(client, write, body, field_manager=MANAGER, subresource="status")
        got = await kube.get(client, read, name, namespace=test_namespace)
    assert got["apiVersion"] == f"multicluster.x-k8s.io/{reader}"
    assert got["spec"] == _profile(name, test_namespace)["spec"]
    assert got["status"]["accessProviders"] == [_provider(extensions=[extension])]
    assert got["status"]["properties"] == [{"name": "region", "value": "eu-west-1"}]


async def _refusal(client: kube.ApiClient, body: dict[str, Any], *, status: bool = False) -> str:
    name = body["metadata"]["name"]
    with pytest.raises(kube.InvalidError) as caught:
        if status:
            await kube.apply(client, V2_PROFILES, body, field_manager=MANAGER, subresource="status")
        else:
            await kube.apply(client, V2_PROFILES, body, field_manager=MANAGER)
    text = str(caught.value)
    assert name in text  # our error names the object
    return text


async def test_v1alpha2_refuses_what_upstreams_rules_refuse(
    hub: ControlPlane, test_namespace: str
) -> None:
    ns = test_namespace
    async with await hub.client() as client:
        bad_manager = _profile("bad-manager", ns, manager="bad name!")
        assert "must be a valid Kubernetes label value" in await _refusal(client, bad_manager)
        await kube.apply(client, V2_PROFILES, _profile("good", ns), field_manager=MANAGER)
        cases = [
            (_status(_provider(server="not a url")), "server must be a valid absolute URL"),
            (
                _status(*(_provider(name=f"p{i}") for i in range(65))),
                "must have at most 64 items",
            ),
            (
                _status(_provider(**{"proxy-url": "ftp://proxy:21"})),
                "proxy-url must be a valid URL",
            ),
        ]
        for status, message in cases:
            text = await _refusal(client, {**_profile("good", ns), "status": status}, status=True)
            assert message in text, text
        # Duplicate extension names: a merge patch gets the schema's 422. (Server-side apply
        # cannot even build its typed patch from such a list and answers 500.)
        duplicates = _status(
            _provider(
                extensions=[
                    {"name": "client.authentication.k8s.io/exec", "extension": {"a": 1}},
                    {"name": "client.authentication.k8s.io/exec", "extension": {"b": 2}},
                ]
            )
        )
        with pytest.raises(kube.InvalidError) as caught:
            await kube.request(
                client,
                "PATCH",
                V2_PROFILES.path(ns, "good") + "/status",
                body={"status": duplicates},
                content_type="application/merge-patch+json",
                target=V2_PROFILES.describe(ns, "good"),
            )
        assert "Duplicate value" in str(caught.value) and "good" in str(caught.value)
        stored = await kube.get(client, V2_PROFILES, "good", namespace=ns)
    assert "status" not in stored or not stored["status"].get("accessProviders")


async def test_v1alpha1_keeps_accepting_what_it_always_did(
    hub: ControlPlane, test_namespace: str
) -> None:
    # Duplicate extension names are refused by v1alpha2 only: v1alpha1 objects stay valid.
    duplicate = [
        {"name": "x", "extension": {"a": 1}},
        {"name": "x", "extension": {"b": 2}},
    ]
    body = {**_profile("old", test_namespace), "status": _status(_provider(extensions=duplicate))}
    async with await hub.client() as client:
        await kube.apply(
            client, kube.CLUSTER_PROFILES, _profile("old", test_namespace), field_manager=MANAGER
        )
        await kube.apply(
            client, kube.CLUSTER_PROFILES, body, field_manager=MANAGER, subresource="status"
        )
        got = await kube.get(client, kube.CLUSTER_PROFILES, "old", namespace=test_namespace)
    assert got["status"]["accessProviders"][0]["cluster"]["extensions"] == duplicate


async def test_placement_decision_v1alpha2_checks_its_references(
    hub: ControlPlane, test_namespace: str
) -> None:
    def decision(name: str, ref: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": test_namespace},
            "decisions": [{"clusterProfileRef": {"name": ref}}],
            "schedulerName": "test",
        }

    async with await hub.client() as client:
        await kube.apply(client, V2_DECISIONS, decision("ok", "member-1"), field_manager=MANAGER)
        with pytest.raises(kube.InvalidError) as caught:
            await kube.apply(
                client, V2_DECISIONS, decision("bad", "Not_A_Name"), field_manager=MANAGER
            )
        assert "must be a valid DNS subdomain name" in str(caught.value)
        got = await kube.get(client, kube.PLACEMENT_DECISIONS, "ok", namespace=test_namespace)
    assert got["decisions"] == [{"clusterProfileRef": {"name": "member-1"}}]
