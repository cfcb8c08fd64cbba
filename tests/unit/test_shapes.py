"""The typed raw shapes say what our producers really write (cluster_inventory.shapes).

A TypedDict is checked only where mypy sees a literal; a dict built key by key, or parsed,
is not. These tests run the producers and hold every key they write to the declared shape,
so a new field is added to the type in the change that writes it.
"""

from __future__ import annotations

import base64
import typing
from typing import Any

from cluster_inventory import kubeconfig
from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.api.views import ProfileView
from cluster_inventory.credentials import (
    ClusterAccess,
    ExecConfig,
    exec_info,
    kubeconfig_for_profile,
)
from cluster_inventory.shapes import (
    RawAccessProvider,
    RawCluster,
    RawExec,
    RawExecCluster,
    RawExecCredential,
    RawExecCredentialSpec,
    RawKubeconfig,
    RawNamedCluster,
    RawNamedContext,
    RawNamedUser,
    RawUser,
)

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n").decode()


def _keys(shape: Any) -> set[str]:
    return set(typing.get_type_hints(shape))


def _profile() -> dict[str, Any]:
    cluster = {
        "server": "https://member:6443",
        "certificate-authority-data": CA,
        "tls-server-name": "member",
        "proxy-url": "http://proxy:3128",
        "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": "m1"}}],
    }
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "m1", "namespace": "team-a"},
        "spec": {"clusterManager": {"name": "cluster-inventory"}},
        "status": {"accessProviders": [{"name": "secretreader", "cluster": cluster}]},
    }


def test_a_generated_kubeconfig_has_the_declared_shape() -> None:
    doc = kubeconfig_for_profile(_profile(), command="/bin/plugin", install_hint="install it")
    assert set(doc) <= _keys(RawKubeconfig)
    for named, shape, body, body_shape in (
        (doc["clusters"][0], RawNamedCluster, "cluster", RawCluster),
        (doc["users"][0], RawNamedUser, "user", RawUser),
    ):
        assert set(named) <= _keys(shape)
        assert set(named[body]) <= _keys(body_shape)
    assert set(doc["users"][0]["user"]["exec"]) <= _keys(RawExec)
    assert set(doc["contexts"][0]) <= _keys(RawNamedContext)
    # And the loader reads it back.
    assert kubeconfig.from_document(doc).server == "https://member:6443"


def test_exec_info_has_the_declared_shape() -> None:
    access = ClusterAccess(
        server="https://member:6443",
        ca_data=b"ca",
        tls_server_name="member",
        insecure_skip_tls_verify=True,
        proxy_url="http://proxy:3128",
        disable_compression=True,
        cluster_config={"clusterName": "m1"},
        exec_config=ExecConfig(command="/bin/plugin", provide_cluster_info=True),
        profile="team-a/m1",
        provider="secretreader",
    )
    cluster = access.cluster_info()
    assert set(cluster) == _keys(RawExecCluster)
    info = exec_info(access.exec_config, cluster)
    assert set(info) <= _keys(RawExecCredential)
    assert set(info["spec"]) == _keys(RawExecCredentialSpec)


def test_the_profile_view_keeps_access_providers_in_their_shape() -> None:
    view = ProfileView.of(_profile())
    provider = view.access_provider("secretreader")
    assert provider is not None
    assert set(provider) <= _keys(RawAccessProvider)
    assert set(provider["cluster"]) <= _keys(RawCluster)
