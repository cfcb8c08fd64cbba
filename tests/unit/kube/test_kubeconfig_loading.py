"""kubectl's loading rules: which file, how a ``$KUBECONFIG`` list merges, what wins."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
import yaml

from cluster_inventory import kube, kubeconfig


def write(path: Path, *, server: str, context: str = "ctx", current: str | None = "ctx",
          namespace: str | None = None, user: dict | None = None, name: str = "c") -> Path:  # fmt: skip
    ctx = {"cluster": name, "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": context, "context": ctx}],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_explicit_path_wins_over_the_environment(tmp_path: Path) -> None:
    one = write(tmp_path / "one", server="https://one:1")
    two = write(tmp_path / "two", server="https://two:2")
    env = {"KUBECONFIG": str(two), "KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"}
    assert kubeconfig.load(one, environ=env).server == "https://one:1"


def test_an_explicit_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match="nope: cannot read"):
        kubeconfig.load(tmp_path / "nope", environ={})


def test_every_kubeconfig_path_is_merged_and_the_first_to_set_a_value_wins(
    tmp_path: Path,
) -> None:
    # The first file names the context but defines no cluster; the second defines it, and
    # a third's same-named cluster and current-context are ignored.
    first = tmp_path / "first"
    first.write_text(yaml.safe_dump({"current-context": "b"}))
    second = write(tmp_path / "second", server="https://second:2", context="b", current="x")
    third = write(tmp_path / "third", server="https://third:3", context="b", current="b")
    env = {"KUBECONFIG": os.pathsep.join(["", str(tmp_path / "missing"), str(first),
                                           str(second), str(third), str(second)])}  # fmt: skip
    loaded = kubeconfig.load(environ=env)
    assert loaded.server == "https://second:2"
    assert loaded.context == "b"
    assert kubeconfig.load(environ=env, context="b").server == "https://second:2"


def test_relative_references_resolve_against_their_own_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "a" / "token").write_text("from-file\n")
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://a:1",
                                               "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": {"tokenFile": "token"}},
                  {"name": "e", "user": {"exec": {"command": "./bin/plugin",
                                                  "apiVersion": "client.authentication.k8s.io/v1"}}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}},
                     {"name": "ex", "context": {"cluster": "c", "user": "e"}}],
        "current-context": "ctx",
    }  # fmt: skip
    (tmp_path / "a" / "config").write_text(yaml.safe_dump(doc))
    env = {"KUBECONFIG": str(tmp_path / "a" / "config")}
    loaded = kubeconfig.load(environ=env)
    assert (loaded.ca_data, loaded.token) == (b"CA", "from-file")
    exec_user = kubeconfig.load(environ=env, context="ex").exec
    assert exec_user is not None
    assert exec_user["command"] == str(tmp_path / "a" / "bin" / "plugin")


def test_in_cluster_comes_before_the_home_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa")
    (sa / "ca.crt").write_bytes(b"CA")
    monkeypatch.setattr(kubeconfig, "IN_CLUSTER_DIR", str(sa))
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", server="https://home:1")
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert kubeconfig.load(environ=pod, home=str(tmp_path)).server == "https://10.0.0.1:443"
    assert kubeconfig.load(environ={}, home=str(tmp_path)).server == "https://home:1"
    # A $KUBECONFIG whose files are all missing falls through as well.
    missing = {"KUBECONFIG": str(tmp_path / "missing")}
    assert kubeconfig.load(environ=missing, home=str(tmp_path)).server == "https://home:1"


def test_nothing_found_says_what_was_tried(tmp_path: Path) -> None:
    with pytest.raises(kubeconfig.KubeconfigError) as info:
        kubeconfig.load(environ={"KUBECONFIG": str(tmp_path / "gone")}, home=str(tmp_path))
    message = str(info.value)
    assert "gone" in message and "KUBERNETES_SERVICE_HOST" in message
    assert str(tmp_path / ".kube" / "config") in message


def test_proxy_url_exec_user_and_namespace_reach_the_connection(tmp_path: Path) -> None:
    exec_user = {"exec": {"command": "plugin", "apiVersion": "client.authentication.k8s.io/v1"}}
    path = write(tmp_path / "k", server="https://m:1", namespace="team-a", user=exec_user)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"]["proxy-url"] = "socks5://127.0.0.1:1080"
    ext = {"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "m"}}
    doc["clusters"][0]["cluster"]["extensions"] = [ext]
    path.write_text(yaml.safe_dump(doc))
    conn = kube.load_connection(path)
    assert conn.proxy_url == "socks5://127.0.0.1:1080"
    assert conn.namespace == "team-a"
    assert conn.exec_user == exec_user["exec"]
    assert conn.exec_cluster_config == {"clusterName": "m"}
    # A registration's kubeconfig (one document) still refuses exec users.
    with pytest.raises(kube.KubeConfigError, match=r"user\.exec: not supported"):
        kube.connection_from_kubeconfig(path)


async def test_a_client_for_an_exec_user_comes_from_credentials(tmp_path: Path) -> None:
    exec_user = {"exec": {"command": "plugin", "apiVersion": "client.authentication.k8s.io/v1"}}
    conn = kube.load_connection(write(tmp_path / "k", server="https://m:1", user=exec_user))
    with pytest.raises(kube.KubeConfigError, match=r"credentials\.hub_client"):
        await kube.new_client(conn)


def test_secrets_stay_out_of_repr(tmp_path: Path) -> None:
    key = base64.b64encode(b"KEY").decode()
    cert = base64.b64encode(b"CERT").decode()
    user = {"token": "s3cr3t", "client-certificate-data": cert, "client-key-data": key}
    loaded = kubeconfig.load(write(tmp_path / "k", server="https://m:1", user=user))
    assert "s3cr3t" not in repr(loaded) and "KEY" not in repr(loaded)


@pytest.mark.parametrize(
    ("url", "proxy", "connector"),
    [
        (None, None, "TCPConnector"),
        ("http://127.0.0.1:3128", "http://127.0.0.1:3128", "TCPConnector"),
        ("https://proxy.example:443", "https://proxy.example:443", "TCPConnector"),
        ("socks5://127.0.0.1:1080", None, "ProxyConnector"),
    ],
)
async def test_each_proxy_scheme_gets_its_transport(
    url: str | None, proxy: str | None, connector: str
) -> None:
    from cluster_inventory.kube._proxy import proxy_connector

    got, made = proxy_connector(url, limit=1, ssl=kube.ssl_context_for(
        kube.ClusterConnection(server="https://m:1")))  # fmt: skip
    try:
        assert got == proxy
        # aiohttp-socks' ProxyConnector, or a subclass (ours raises SocksProxyError)
        assert connector in [c.__name__ for c in type(made).__mro__][:2]
    finally:
        await made.close()


@pytest.mark.parametrize("url", ["ftp://p:21", "socks4://p:1080", "http://", "http://u:pw@:1"])
def test_a_bad_proxy_url_is_refused_without_its_password(url: str) -> None:
    from cluster_inventory.kube._proxy import proxy_connector

    with pytest.raises(kube.KubeConfigError, match="proxy-url") as info:
        proxy_connector(url, limit=1, ssl=kube.ssl_context_for(
            kube.ClusterConnection(server="https://m:1")))  # fmt: skip
    assert "pw" not in str(info.value)
