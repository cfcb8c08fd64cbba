"""A profile's access as the Argo CD render sees it: not published yet, or behind a proxy."""

from __future__ import annotations

import json
from base64 import b64decode

import pytest

from cluster_inventory.credentials import AccessNotPublished, AccessProviderNotFound, resolve_access
from cluster_inventory.integrations.sync._assignment import RenderError, RenderPending
from cluster_inventory.integrations.sync.argocd import render_cluster_secret
from tests.support.data.access_profiles import profile, providers


def not_joined() -> dict:
    joined = profile()
    return {k: v for k, v in joined.items() if k != "status"}


def test_no_access_provider_yet_is_pending_not_a_mismatch() -> None:
    with pytest.raises(AccessNotPublished) as info:
        resolve_access(not_joined(), providers())
    assert isinstance(info.value, AccessProviderNotFound)  # callers of the old type still work
    assert "team-a/c1" in str(info.value)
    with pytest.raises(RenderPending) as pending:
        render_cluster_secret(not_joined(), providers(), namespace="argocd")
    assert pending.value.field == "status.accessProviders"
    # The parts of the access error, not a parsed message.
    assert pending.value.problem == info.value.problem
    # Each said once: the Event a sync writes (and describe prints) once read
    # "status.accessProviders: status.accessProviders: none published yet".
    assert (
        str(pending.value)
        == str(info.value)
        == (
            "ClusterProfile team-a/c1: status.accessProviders: none published yet (the member "
            "has not joined); waiting for the cluster manager"
        )
    )


def test_a_provider_the_file_does_not_know_is_still_an_error() -> None:
    with pytest.raises(RenderError) as info:
        render_cluster_secret(profile(provider="other"), providers(), namespace="argocd")
    assert not isinstance(info.value, RenderPending)


@pytest.mark.parametrize("proxy", ["socks5://p:1080", "http://p:3128", "https://p:443"])
def test_proxy_url_becomes_the_config_proxy_url(proxy: str) -> None:
    secret = render_cluster_secret(profile(**{"proxy-url": proxy}), providers(), namespace="a")
    assert json.loads(b64decode(secret["data"]["config"]))["proxyUrl"] == proxy
    plain = render_cluster_secret(profile(), providers(), namespace="a")
    assert "proxyUrl" not in json.loads(b64decode(plain["data"]["config"]))
