"""Registration from Cluster API: Clusters and their kubeconfig Secrets become members.

The hub carries Cluster API's real ``Cluster`` CRD, read from the ``sigs.k8s.io/cluster-api``
Go module; the "workload clusters" are the fleet's real members, whose kubeconfig is written
into ``<cluster>-kubeconfig`` the way Cluster API writes it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CAPI_CLUSTERSET, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.manager.members.accounts import list_grants
from cluster_inventory.manager.sources.capi import (
    CAPI_SECRET_TYPE,
    CLUSTERS,
    LABEL_CAPI_CLUSTER_NAME,
    PROPERTY_CAPI_VERSION,
)
from cluster_inventory.testing import ControlPlane, Fleet
from cluster_inventory_workshop import upstream_crd
from tests.support.hub.manager import Harness, running_manager
from tests.support.waiting import eventually


@pytest.fixture
async def capi(fleet: Fleet, test_namespace: str) -> AsyncIterator[Harness]:
    """A manager whose sources are registration Secrets first, then Cluster API Clusters of
    the test namespace."""
    async with await fleet.hub.client() as hub:
        await kube.ensure_crds(hub, [upstream_crd("clusters.cluster.x-k8s.io")])
    async with running_manager(
        fleet, test_namespace, sources=("secrets", "capi"), capi_namespaces=(test_namespace,)
    ) as h:
        yield h


async def _cluster(
    h: Harness, name: str, clusterset: str | None = "prod", *, initialized: bool = True
) -> dict[str, Any]:
    labels = {LABEL_CAPI_CLUSTERSET: clusterset} if clusterset else {}
    body = {
        "apiVersion": CLUSTERS.api_version,
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": h.namespace, "labels": labels},
        "spec": {"topology": {"classRef": {"name": "quick-start"}, "version": "v1.36.3"}},
    }
    created = await kube.create(h.hub_client, CLUSTERS, body)
    if initialized:
        await _initialize(h, name)
    return created


async def _initialize(h: Harness, name: str) -> None:
    await kube.apply(
        h.hub_client,
        CLUSTERS,
        {
            "apiVersion": CLUSTERS.api_version,
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": h.namespace},
            "status": {"initialization": {"controlPlaneInitialized": True}},
        },
        field_manager="capi-controller",
        subresource="status",
    )


async def _kubeconfig_secret(
    h: Harness,
    cluster: str,
    member: ControlPlane | None,
    *,
    user: str = "admin",
    raw: str = "",
    labelled: bool = True,
) -> None:
    """Write ``<cluster>-kubeconfig`` as Cluster API does (type, label, key ``value``);
    ``labelled=False`` leaves out the cluster-name label, as a Secret made by hand may."""
    if member is None:
        text = raw
    elif user == "admin":
        text = yaml.safe_dump(member.kubeconfig())  # what registration Secrets carry too
    else:
        text = yaml.safe_dump(member.kubeconfig(user, ["system:masters"]))
    await kube.apply(
        h.hub_client,
        kube.SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": CAPI_SECRET_TYPE,
            "metadata": {
                "name": f"{cluster}-kubeconfig",
                "namespace": h.namespace,
                "labels": {LABEL_CAPI_CLUSTER_NAME: cluster} if labelled else {},
            },
            "data": {"value": base64.b64encode(text.encode()).decode()},
        },
        field_manager="capi-controller",
    )


async def _condition(h: Harness, ns: str, name: str, ctype: str) -> tuple[str, str] | None:
    cond = await h.condition(ns, name, ctype)
    return (cond["status"], cond["reason"]) if cond else None


async def _is(h: Harness, ns: str, name: str, ctype: str, status: str, reason: str = "") -> bool:
    found = await _condition(h, ns, name, ctype)
    return found is not None and found[0] == status and (not reason or found[1] == reason)


async def _events(h: Harness, name: str, reason: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=h.namespace)
    return [
        e
        for e in listed["items"]
        if e["regarding"].get("name") == name and e.get("reason") == reason
    ]


async def test_cluster_joins_once_its_control_plane_is_initialized(capi: Harness) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await _kubeconfig_secret(h, "wl1", h.member(0))
    await _cluster(h, "wl1", initialized=False)

    await eventually(
        lambda: _is(h, ns, "wl1", "Joined", "False", "ControlPlaneNotInitialized"),
        what="wl1 not joined",
    )
    status = (await h.profile(ns, "wl1"))["status"]
    assert "accessProviders" not in status  # nothing to reach yet
    declared = {p["name"]: p["value"] for p in status["properties"]}
    assert declared[PROPERTY_CAPI_VERSION] == "v1.36.3"

    await _initialize(h, "wl1")
    await eventually(lambda: _is(h, ns, "wl1", "ControlPlaneHealthy", "True"), what="healthy")
    await eventually(lambda: _is(h, ns, "wl1", "Joined", "True"), what="joined")
    profile = await h.profile(ns, "wl1")
    status = profile["status"]
    assert status["version"]["kubernetes"].startswith("v1.")
    (provider,) = status["accessProviders"]
    assert provider["cluster"]["server"] == h.member(0).server
    async with await h.member(0).client() as member:
        kube_system = await kube.get(member, kube.NAMESPACES, "kube-system")

    async def member_id() -> bool:
        return await _label(h, ns, "wl1") == kube_system["metadata"]["uid"]

    await eventually(member_id, what="member id")
    # The consumer token Secret is minted as for any member.
    await eventually(
        lambda: kube.get(h.hub_client, kube.SECRETS, "wl1", namespace=ns), what="token Secret"
    )


async def test_a_kubeconfig_secret_without_the_cluster_name_label_is_found(
    capi: Harness,
) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await _kubeconfig_secret(h, "wl9", h.member(1), labelled=False)
    await _cluster(h, "wl9")
    await eventually(lambda: _is(h, ns, "wl9", "Joined", "True"), timeout=60, what="joined")
    assert not await _events(h, "wl9", "InvalidRegistration")


async def _label(h: Harness, ns: str, name: str) -> str | None:
    profile = await h.profile(ns, name)
    return (profile["metadata"].get("labels") or {}).get(LABEL_INVENTORY_MEMBER_ID)


async def test_rotated_kubeconfig_is_used_without_a_restart(capi: Harness) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await _kubeconfig_secret(h, "wl2", h.member(1))
    await _cluster(h, "wl2")
    await eventually(lambda: _is(h, ns, "wl2", "ControlPlaneHealthy", "True"), what="healthy")
    before = {c.client_cert_data for c in h.manager.members}

    await _kubeconfig_secret(h, "wl2", h.member(1), user="rotated")

    def rotated() -> bool:
        certs = {c.client_cert_data for c in h.manager.members}
        return bool(certs - before) and not (certs & before)

    await eventually(rotated, what="the manager to use the rotated credential")
    await eventually(lambda: _is(h, ns, "wl2", "ControlPlaneHealthy", "True"), what="healthy")
    await eventually(lambda: _is(h, ns, "wl2", "Joined", "True"), what="still joined")


async def test_deleted_cluster_loses_its_profile(capi: Harness) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await _kubeconfig_secret(h, "wl3", h.member(0))
    await _cluster(h, "wl3")
    await eventually(lambda: _is(h, ns, "wl3", "Joined", "True"), what="joined")

    await kube.delete(h.hub_client, CLUSTERS, "wl3", namespace=h.namespace)

    async def gone() -> bool:
        return "wl3" not in await h.profile_names(ns)

    await eventually(gone, what="wl3's profile deleted")
    # Everything made on the member for this manager's consumers goes too: the member left.
    async with await h.member(0).client() as member:

        async def nothing_held() -> bool:
            return await list_grants(member, h.manager.config.name, h.namespace) == []

        await eventually(nothing_held, what="member ServiceAccount and binding removed")


async def test_broken_kubeconfig_secret_is_reported_and_others_go_on(capi: Harness) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await _kubeconfig_secret(h, "good", h.member(0))
    await _cluster(h, "good")
    await _kubeconfig_secret(h, "broken", None, raw="clusters: [oops")
    await _cluster(h, "broken")
    await _cluster(h, "nosecret")

    await eventually(lambda: _is(h, ns, "good", "ControlPlaneHealthy", "True"), what="good")
    await eventually(
        lambda: _is(h, ns, "broken", "Joined", "False", "KubeconfigSecretInvalid"),
        what="broken's condition",
    )
    await eventually(
        lambda: _is(h, ns, "nosecret", "Joined", "False", "KubeconfigSecretMissing"),
        what="nosecret's condition",
    )
    (event,) = await eventually(lambda: _events(h, "broken", "InvalidRegistration"), what="event")
    assert event["type"] == "Warning"
    assert event["regarding"]["kind"] == "Cluster"
    assert f"Secret {h.namespace}/broken-kubeconfig" in event["note"]
    assert "data.value" in event["note"]
    await eventually(lambda: _events(h, "nosecret", "InvalidRegistration"), what="event 2")

    # A bad rotation of a good member keeps its last good credential and is reported.
    await _kubeconfig_secret(h, "good", None, raw="not: [a kubeconfig")
    await eventually(lambda: _events(h, "good", "InvalidRegistration"), what="event 3")
    assert await _is(h, ns, "good", "ControlPlaneHealthy", "True")
    assert await _is(h, ns, "good", "Joined", "True")


async def test_member_through_both_sources_gets_one_profile(capi: Harness) -> None:
    h = capi
    ns = await h.inventory("prod", "prod")
    await h.register("viasecret", h.member(1), ["prod"])
    await _kubeconfig_secret(h, "viacapi", h.member(1))
    await _cluster(h, "viacapi")

    async def one_profile() -> bool:
        names = await h.profile_names(ns)
        return len(names & {"viasecret", "viacapi"}) == 1

    async def reported() -> list[dict[str, Any]]:
        found = await _events(h, "viacapi", "DuplicateMember") + await _events(
            h, "viasecret", "DuplicateMember"
        )
        return [e for e in found if f"inventory {ns} " in e["note"]]

    (event,) = await eventually(reported, what="DuplicateMember event")
    assert event["type"] == "Warning"
    await eventually(one_profile, what="one profile for the member")
    # The same kubeconfig through both sources is one member connection.
    servers = [c.server for c in h.manager.members if c.server == h.member(1).server]
    assert len(servers) == 1


async def test_static_file_source_registers_its_members(
    fleet: Fleet, test_namespace: str, tmp_path
) -> None:
    member = next(iter(fleet.members.values()))
    (tmp_path / "east.kubeconfig").write_text(yaml.safe_dump(member.kubeconfig()))
    clusters = tmp_path / "clusters.yaml"
    clusters.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": "east", "kubeconfig": "east.kubeconfig", "clustersets": ["prod"]},
                    {"name": "west", "kubeconfig": "missing.kubeconfig", "clustersets": "prod"},
                ]
            }
        )
    )
    async with running_manager(fleet, test_namespace, sources=(f"file:{clusters}",)) as h:
        ns = await h.inventory("prod", "prod")
        await eventually(lambda: _is(h, ns, "east", "ControlPlaneHealthy", "True"), what="east")
        assert await h.profile_names(ns) == {"east"}  # west's entry is reported, not guessed
        assert h.manager.metrics.invalid_registrations._value.get() == 1
