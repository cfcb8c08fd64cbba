"""The one-cluster kubeconfig writer: what it writes is what the loader reads back."""

from __future__ import annotations

import base64

from cluster_inventory import kube, kubeconfig


def test_a_written_kubeconfig_reads_back_as_its_cluster_user_and_namespace() -> None:
    connection = kube.ClusterConnection(
        server="https://127.0.0.1:6443", ca_data=b"CA", tls_server_name="hub.internal"
    )
    doc = kubeconfig.one_cluster_document(
        name="hub",
        cluster=connection.kubeconfig_cluster(),
        user={"token": "s3cr3t"},
        user_name="agent",
        namespace="team-a",
    )
    read = kubeconfig.from_document(doc)
    assert (read.context, read.cluster, read.user) == ("hub", "hub", "agent")
    assert read.server == "https://127.0.0.1:6443"
    assert read.ca_data == b"CA"
    assert read.tls_server_name == "hub.internal"
    assert read.token == "s3cr3t"
    assert read.namespace == "team-a"


def test_the_user_is_named_after_the_cluster_and_no_namespace_is_written_unless_asked() -> None:
    cert = base64.b64encode(b"CERT").decode()
    doc = kubeconfig.one_cluster_document(
        name="m1",
        cluster={"server": "https://m1:443"},
        user={"client-certificate-data": cert, "client-key-data": cert},
    )
    assert list(doc) == ["apiVersion", "kind", "clusters", "users", "contexts", "current-context"]
    assert doc["users"] == [{"name": "m1", "user": doc["users"][0]["user"]}]
    assert doc["contexts"] == [{"name": "m1", "context": {"cluster": "m1", "user": "m1"}}]
    assert kubeconfig.from_document(doc).client_cert_data == b"CERT"
