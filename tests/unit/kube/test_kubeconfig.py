"""Kubeconfig parsing: what it reads, and errors that name the file and the field."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from cluster_inventory import kube


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config(user: dict, cluster: dict | None = None, namespace: str | None = None) -> dict:
    ctx = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    return {
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": ctx}],
        "current-context": "ctx",
    }


def test_token_user_and_context_namespace() -> None:
    conn = kube.connection_from_kubeconfig(config({"token": "s3cr3t"}, namespace="team-a"))
    assert conn.server == "https://127.0.0.1:1"
    assert conn.token == "s3cr3t"
    assert conn.namespace == "team-a"
    assert "s3cr3t" not in repr(conn)


def test_files_are_resolved_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("CA")
    (tmp_path / "token").write_text("from-file\n")
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            config(
                {"tokenFile": "token"},
                {
                    "server": "https://h:1",
                    "certificate-authority": "ca.crt",
                    "tls-server-name": "api",
                },
            )
        )
    )
    conn = kube.connection_from_kubeconfig(path)
    assert conn.ca_data == b"CA"
    assert conn.token == "from-file"
    assert conn.tls_server_name == "api"


def test_client_cert_without_key_is_refused() -> None:
    with pytest.raises(kube.KubeConfigError, match=r"users\[name=u\].user: client-certificate"):
        kube.connection_from_kubeconfig(config({"client-certificate-data": b64("C")}))


def test_bad_base64_names_the_field() -> None:
    with pytest.raises(
        kube.KubeConfigError, match=r"clusters\[name=c\]\.cluster\.certificate-authority-data"
    ):
        kube.connection_from_kubeconfig(
            config({"token": "t"}, {"server": "https://h:1", "certificate-authority-data": "%%%"})
        )


def test_missing_server_names_the_field() -> None:
    with pytest.raises(kube.KubeConfigError, match=r"cluster\.server is missing"):
        kube.connection_from_kubeconfig(config({"token": "t"}, {"insecure-skip-tls-verify": True}))


def test_unknown_context_is_named() -> None:
    with pytest.raises(kube.KubeConfigError, match="no entry named 'other' in contexts"):
        kube.connection_from_kubeconfig(config({"token": "t"}), context="other")


def test_exec_users_are_pointed_to_credentials() -> None:
    with pytest.raises(kube.KubeConfigError, match=r"user\.exec: not supported"):
        kube.connection_from_kubeconfig(config({"exec": {"command": "x"}}))


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(kube.KubeConfigError, match=str(missing)):
        kube.connection_from_kubeconfig(missing)


def test_garbage_ca_is_a_config_error() -> None:
    conn = kube.ClusterConnection(server="https://h:1", ca_data=b"not a pem", name="m1")
    with pytest.raises(kube.KubeConfigError, match="m1: CA data is not a PEM bundle"):
        kube.ssl_context_for(conn)


def test_in_cluster_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cluster_inventory import kubeconfig

    monkeypatch.setattr(kubeconfig, "IN_CLUSTER_DIR", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(kube.KubeConfigError, match="KUBERNETES_SERVICE_HOST"):
        kube.connection_from_in_cluster()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(kube.KubeConfigError, match="cannot read"):
        kube.connection_from_in_cluster()
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "namespace").write_text("cluster-inventory-system")
    conn = kube.connection_from_in_cluster()
    assert conn.server == "https://[fd00::1]:443"
    assert conn.token == "sa-token"
    assert conn.ca_data == b"CA"
    assert conn.namespace == "cluster-inventory-system"
