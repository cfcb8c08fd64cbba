import base64
import copy

import pytest

from cluster_inventory.api.constants import (
    EXTENSION_ADDITIONAL_ARGS,
    EXTENSION_ADDITIONAL_ENVS,
    EXTENSION_EXEC,
)
from cluster_inventory.credentials import (
    AccessProviderNotFound,
    AccessResolutionError,
    ProviderConfig,
    resolve_access,
)

CA = b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"


def providers(*names, args_policy="", env_policy="", args=None, env=None):
    return ProviderConfig.from_dict(
        {
            "providers": [
                {
                    "name": n,
                    "execConfig": {
                        "command": f"/bin/{n}",
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "args": args,
                        "env": env,
                        "provideClusterInfo": True,
                    },
                    "profileSourcedCLIArgsPolicy": args_policy,
                    "profileSourcedEnvVarsPolicy": env_policy,
                }
                for n in names
            ]
        },
        source="providers.json",
    )


def profile(access=(), legacy=(), extensions=None, **cluster_extra):
    def entry(name, server):
        cluster = {
            "server": server,
            "certificate-authority-data": base64.b64encode(CA).decode(),
            **cluster_extra,
        }
        if extensions is not None:
            cluster["extensions"] = extensions
        return {"name": name, "cluster": cluster}

    status = {}
    if access:
        status["accessProviders"] = [entry(n, s) for n, s in access]
    if legacy:
        status["credentialProviders"] = [entry(n, s) for n, s in legacy]
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "c1", "namespace": "team-a"},
        "spec": {"clusterManager": {"name": "m"}},
        "status": status,
    }


def test_first_provider_in_file_order_wins():
    p = profile(access=[("b", "https://b"), ("a", "https://a")])
    access = resolve_access(p, providers("a", "b"))
    assert access.provider == "a"
    assert access.server == "https://a"
    assert access.ca_data == CA
    assert access.exec_config.interactive_mode == "Never"


def test_access_providers_win_over_deprecated_credential_providers():
    p = profile(access=[("a", "https://new")], legacy=[("a", "https://old"), ("z", "https://z")])
    assert resolve_access(p, providers("a")).server == "https://new"
    assert resolve_access(p, providers("z")).server == "https://z"


def test_no_match_names_profile_and_offers():
    with pytest.raises(AccessProviderNotFound) as info:
        resolve_access(profile(access=[("google", "https://g")]), providers("secretreader"))
    assert "team-a/c1" in str(info.value)
    assert "google" in str(info.value)
    assert "secretreader" in str(info.value)


def test_exec_extension_becomes_cluster_config():
    ext = [{"name": EXTENSION_EXEC, "extension": {"clusterName": "c1"}}]
    access = resolve_access(profile(access=[("a", "https://a")], extensions=ext), providers("a"))
    info = access.cluster_info()
    assert info["config"] == {"clusterName": "c1"}
    assert info["server"] == "https://a"
    assert base64.b64decode(info["certificate-authority-data"]) == CA


def test_profile_sourced_args_and_envs_ignored_by_default():
    ext = [
        {"name": EXTENSION_ADDITIONAL_ARGS, "extension": ["--x"]},
        {"name": EXTENSION_ADDITIONAL_ENVS, "extension": {"E": "profile"}},
    ]
    access = resolve_access(
        profile(access=[("a", "https://a")], extensions=ext),
        providers("a", args=["--base"], env=[{"name": "E", "value": "file"}]),
    )
    assert access.exec_config.args == ("--base",)
    assert {e.name: e.value for e in access.exec_config.env} == {"E": "file"}


@pytest.mark.parametrize(
    ("policy", "expected"), [("AppendIfNotExists", "file"), ("Replace", "profile")]
)
def test_profile_sourced_envs_under_policy(policy, expected):
    ext = [{"name": EXTENSION_ADDITIONAL_ENVS, "extension": {"E": "profile", "F": "new"}}]
    access = resolve_access(
        profile(access=[("a", "https://a")], extensions=ext),
        providers("a", env_policy=policy, env=[{"name": "E", "value": "file"}]),
    )
    assert {e.name: e.value for e in access.exec_config.env} == {"E": expected, "F": "new"}


def test_append_policy_never_mutates_shared_config():
    ext = [{"name": EXTENSION_ADDITIONAL_ARGS, "extension": ["--extra"]}]
    config = providers("a", args_policy="Append", args=["--base"])
    before = copy.deepcopy(config)
    p = profile(access=[("a", "https://a")], extensions=ext)
    for _ in range(3):
        access = resolve_access(p, config)
    assert access.exec_config.args == ("--base", "--extra")
    assert config == before


def test_insecure_refused_unless_allowed():
    p = profile(access=[("a", "https://a")], **{"insecure-skip-tls-verify": True})
    with pytest.raises(AccessResolutionError, match="insecure-skip-tls-verify"):
        resolve_access(p, providers("a"))
    assert resolve_access(p, providers("a"), allow_insecure=True).insecure_skip_tls_verify


def test_tls_settings_carried():
    p = profile(
        access=[("a", "https://a")],
        **{"tls-server-name": "kubernetes", "proxy-url": "http://proxy:3128"},
    )
    access = resolve_access(p, providers("a"))
    conn = access.connection()
    assert conn.tls_server_name == "kubernetes"
    assert conn.proxy_url == "http://proxy:3128"
    assert access.cluster_info()["proxy-url"] == "http://proxy:3128"


def test_bad_extension_payload_and_duplicates_are_errors():
    bad = [{"name": EXTENSION_ADDITIONAL_ARGS, "extension": {"args": [1]}}]
    with pytest.raises(AccessResolutionError, match="list of strings"):
        resolve_access(
            profile(access=[("a", "https://a")], extensions=bad),
            providers("a", args_policy="Append"),
        )
    dup = [{"name": "x", "extension": {}}, {"name": "x", "extension": {}}]
    with pytest.raises(AccessResolutionError, match="duplicate name 'x'"):
        resolve_access(profile(access=[("a", "https://a")], extensions=dup), providers("a"))


def test_cache_key_depends_on_exec_config_and_cluster():
    a1 = resolve_access(profile(access=[("a", "https://a")]), providers("a"))
    a2 = resolve_access(profile(access=[("a", "https://a")]), providers("a"))
    other = resolve_access(profile(access=[("a", "https://b")]), providers("a"))
    assert a1.cache_key == a2.cache_key
    assert a1.cache_key != other.cache_key


def test_missing_exec_config_is_an_error():
    config = ProviderConfig.from_dict({"providers": [{"name": "a"}]}, source="f.json")
    with pytest.raises(AccessResolutionError, match="has no execConfig"):
        resolve_access(profile(access=[("a", "https://a")]), config)
