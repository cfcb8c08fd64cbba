"""A consumer with a provider file reaches a member through our secretreader plugin."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    ExecPluginFailed,
    ExecPluginNotFound,
    connect,
    httpx_client,
    load_provider_file,
    resolve_access,
)
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.published import PROFILE, Published


def new_cache(**kwargs) -> CredentialCache:
    return CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()), **kwargs)


async def list_configmaps(client: kube.ApiClient, namespace: str) -> list[str]:
    listed = await kube.list_objects(client, kube.CONFIG_MAPS, namespace=namespace)
    return [i["metadata"]["name"] for i in listed["items"]]


async def test_consumer_reaches_member_with_a_token_request_token(published: Published) -> None:
    cache = new_cache()
    async with await connect(published.profile, published.provider_file, cache=cache) as client:
        names = await list_configmaps(client, published.namespace)
        with pytest.raises(kube.ForbiddenError):  # view in its namespace only
            await list_configmaps(client, "kube-system")
    assert "hello" in names
    assert cache.runs == 1
    cred = cache.peek(
        resolve_access(published.profile, load_provider_file(published.provider_file))
    )
    assert cred is not None and cred.expiration is not None  # our plugin forwards the expiry


async def test_expiry_leads_to_one_re_exec(published: Published) -> None:
    class Clock:
        now = dt.datetime.now(dt.UTC)

        def __call__(self) -> dt.datetime:
            return self.now

    clock = Clock()
    cache = new_cache(now=clock)
    async with await connect(published.profile, published.provider_file, cache=cache) as client:
        await list_configmaps(client, published.namespace)
        await list_configmaps(client, published.namespace)
        assert cache.runs == 1
        clock.now += dt.timedelta(hours=2)
        await asyncio.gather(*(list_configmaps(client, published.namespace) for _ in range(20)))
    assert cache.runs == 2


async def test_unauthorized_leads_to_one_re_exec_and_a_retry(published: Published) -> None:
    cache = new_cache()
    # The plugin first hands out a token the member refuses; by the time the request is
    # refused, the Secret holds a good one (as after a rotation the consumer did not see).
    await published.store("not-a-valid-token", None)
    async with await connect(published.profile, published.provider_file, cache=cache) as client:
        assert cache.runs == 1
        await published.mint()
        names = await list_configmaps(client, published.namespace)
        assert cache.runs == 2
        await list_configmaps(client, published.namespace)
    assert "hello" in names
    assert cache.runs == 2


async def test_hundred_concurrent_connects_run_the_plugin_once(published: Published) -> None:
    cache = new_cache()
    clients = await asyncio.gather(
        *(connect(published.profile, published.provider_file, cache=cache) for _ in range(100))
    )
    try:
        results = await asyncio.gather(*(list_configmaps(c, published.namespace) for c in clients))
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    assert all("hello" in r for r in results)
    assert cache.runs == 1


async def test_httpx_adapter_shares_the_cache(published: Published) -> None:
    cache = new_cache()
    await published.store("not-a-valid-token", None)
    async with httpx_client(published.profile, published.provider_file, cache=cache) as client:
        await cache.get(client.auth.access)  # type: ignore[attr-defined]
        await published.mint()
        response = await client.get(f"/api/v1/namespaces/{published.namespace}/configmaps")
        again = await client.get(f"/api/v1/namespaces/{published.namespace}/configmaps")
    assert response.status_code == 200
    assert "hello" in response.text
    assert again.status_code == 200
    assert cache.runs == 2


async def test_missing_secret_is_a_plugin_failure_naming_it(published: Published, tmp_path) -> None:
    async with await published.hub.client() as hub:
        await kube.delete(hub, kube.SECRETS, PROFILE, namespace=published.namespace)
    with pytest.raises(ExecPluginFailed) as info:
        await connect(published.profile, published.provider_file, cache=new_cache())
    assert f"{published.namespace}/{PROFILE}" in str(info.value)
    assert "404" in str(info.value) or "not found" in str(info.value)


async def test_missing_plugin_names_install_hint(published: Published, tmp_path) -> None:
    path = tmp_path / "p.json"
    path.write_text(
        '{"providers": [{"name": "secretreader", "execConfig": {"apiVersion": '
        '"client.authentication.k8s.io/v1", "command": "/nope/secretreader", '
        '"installHint": "pip install cluster-inventory"}}]}'
    )
    with pytest.raises(ExecPluginNotFound, match="pip install cluster-inventory"):
        await connect(published.profile, path, cache=new_cache())


async def test_plugin_without_cluster_info_fails_without_leaking(
    published: Published, tmp_path
) -> None:
    token = await published.mint()
    pf = provider_file(
        tmp_path / "p.json",
        str(PLUGIN),
        ["--namespace", published.namespace],
        {"KUBECONFIG": str(published.hub.kubeconfig_path)},
        cluster_info=False,
    )
    with pytest.raises(ExecPluginFailed) as info:
        await connect(published.profile, pf, cache=new_cache())
    assert "provideClusterInfo" in str(info.value)
    assert info.value.exit_code == 1
    assert token not in str(info.value)
