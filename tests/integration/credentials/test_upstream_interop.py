"""Interop: the upstream Go secretreader plugin reads our Secrets; our runner drives it."""

from __future__ import annotations

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    connect,
    load_provider_file,
    resolve_access,
)
from cluster_inventory_workshop import upstream_plugin
from tests.support.data.provider_files import provider_file
from tests.support.hub.published import Published


async def test_upstream_secretreader_reads_our_secret_format(
    published: Published, tmp_path
) -> None:
    plugin = upstream_plugin("secretreader")
    # Upstream infers the namespace from the kubeconfig context: give it the test namespace.
    config = published.hub.kubeconfig()
    config["contexts"][0]["context"]["namespace"] = published.namespace
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    pf = provider_file(
        tmp_path / "providers.json", str(plugin), [], {"KUBECONFIG": str(kubeconfig)}
    )
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))

    async with await connect(published.profile, pf, cache=cache) as client:
        listed = await kube.list_objects(client, kube.CONFIG_MAPS, namespace=published.namespace)

    assert "hello" in {i["metadata"]["name"] for i in listed["items"]}
    cred = cache.peek(resolve_access(published.profile, load_provider_file(pf)))
    assert cred is not None
    assert cred.expiration is None  # upstream does not forward the expiry; ours does
    assert cache.runs == 1


async def test_client_certificate_from_upstream_kubeconfig_secretreader(
    published: Published, tmp_path
) -> None:
    """The upstream kubeconfig-secretreader returns a client certificate; connect() uses it."""
    import base64

    from cluster_inventory.api.constants import EXTENSION_EXEC

    plugin = upstream_plugin("kubeconfig-secretreader")
    member_kc = published.member.kubeconfig("cert-user", groups=["system:masters"])
    async with await published.hub.client() as hub:
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "metadata": {"name": "member-kubeconfig", "namespace": published.namespace},
                "data": {"value": base64.b64encode(yaml.safe_dump(member_kc).encode()).decode()},
            },
            field_manager="test",
        )
    profile = {
        **published.profile,
        "status": {
            "accessProviders": [
                {
                    "name": "kubeconfig-secretreader",
                    "cluster": {
                        **published.profile["status"]["accessProviders"][0]["cluster"],
                        "extensions": [
                            {
                                "name": EXTENSION_EXEC,
                                "extension": {"name": "member-kubeconfig", "key": "value"},
                            }
                        ],
                    },
                }
            ]
        },
    }
    config = published.hub.kubeconfig()
    config["contexts"][0]["context"]["namespace"] = published.namespace
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    pf = tmp_path / "providers.json"
    pf.write_text(
        '{"providers": [{"name": "kubeconfig-secretreader", "execConfig": {'
        '"apiVersion": "client.authentication.k8s.io/v1", '
        f'"command": "{plugin}", "provideClusterInfo": true, '
        f'"env": [{{"name": "KUBECONFIG", "value": "{kubeconfig}"}}]}}}}]}}'
    )
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
    async with await connect(profile, pf, cache=cache) as client:
        listed = await kube.list_objects(client, kube.NAMESPACES)
    assert "kube-system" in {i["metadata"]["name"] for i in listed["items"]}
    cred = cache.peek(resolve_access(profile, load_provider_file(pf)))
    assert cred is not None
    assert cred.client_certificate_data is not None and cred.token is None
