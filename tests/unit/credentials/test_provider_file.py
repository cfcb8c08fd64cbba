import json

import pytest

from cluster_inventory.credentials import (
    CLIArgsPolicy,
    EnvVarsPolicy,
    ProviderConfig,
    ProviderConfigError,
    load_provider_file,
)

UPSTREAM = {
    "providers": [
        {
            "name": "secretreader",
            "execConfig": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "./bin/secretreader-plugin",
                "args": None,
                "env": None,
                "provideClusterInfo": True,
            },
            "profileSourcedCLIArgsPolicy": "Append",
            "profileSourcedEnvVarsPolicy": "AppendIfNotExists",
        }
    ]
}


def test_upstream_json_example_loads(tmp_path):
    path = tmp_path / "providers.json"
    path.write_text(json.dumps(UPSTREAM))
    config = load_provider_file(path)
    (provider,) = config.providers
    assert provider.name == "secretreader"
    assert provider.exec_config is not None
    assert provider.exec_config.command == "./bin/secretreader-plugin"
    assert provider.exec_config.args == ()
    assert provider.exec_config.provide_cluster_info is True
    assert provider.cli_args_policy is CLIArgsPolicy.APPEND
    assert provider.env_vars_policy is EnvVarsPolicy.APPEND_IF_NOT_EXISTS


def test_yaml_and_case_insensitive_keys(tmp_path):
    path = tmp_path / "providers.yaml"
    path.write_text(
        "providers:\n- name: a\n  execconfig:\n    apiversion: client.authentication.k8s.io/v1beta1\n"
        "    command: plug\n    env: [{name: X, value: '1'}]\n"
    )
    (provider,) = load_provider_file(path).providers
    assert provider.exec_config is not None
    assert provider.exec_config.api_version.endswith("v1beta1")
    assert provider.exec_config.env[0].name == "X"
    assert provider.cli_args_policy is CLIArgsPolicy.IGNORE
    assert provider.env_vars_policy is EnvVarsPolicy.IGNORE


def test_empty_object_gives_no_providers(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{}")
    assert load_provider_file(path).providers == ()


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        (
            {"providers": [{"name": "a", "profileSourcedCLIArgsPolicy": "Prepend"}]},
            "providers[0].profileSourcedCLIArgsPolicy",
            "unsupported value 'Prepend'",
        ),
        (
            {"providers": [{"name": "a", "profileSourcedEnvVarsPolicy": "Merge"}]},
            "providers[0].profileSourcedEnvVarsPolicy",
            "unsupported value 'Merge'",
        ),
        ({"providers": [{"execConfig": {}}]}, "providers[0].name", "is required"),
        (
            {"providers": [{"name": "a", "execConfig": {"command": "x", "apiVersion": "v2"}}]},
            "providers[0].execConfig.apiVersion",
            "unsupported value 'v2'",
        ),
        (
            {
                "providers": [
                    {"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1"}}
                ]
            },
            "providers[0].execConfig.command",
            "is required",
        ),
        ({"providers": [{"name": "a", "colour": "red"}]}, "providers[0].colour", "unknown field"),
        ({"providers": "x"}, "providers", "must be a list"),
    ],
)
def test_bad_fields_name_file_and_field(tmp_path, doc, field, words):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProviderConfigError) as info:
        load_provider_file(path)
    assert info.value.field == field
    assert str(path) in str(info.value)
    assert words in str(info.value)


def test_unreadable_and_unparsable_files(tmp_path):
    with pytest.raises(ProviderConfigError, match="cannot read"):
        load_provider_file(tmp_path / "absent.json")
    path = tmp_path / "garbage.json"
    path.write_text("{: [")
    with pytest.raises(ProviderConfigError, match="neither JSON nor YAML"):
        load_provider_file(path)


def test_env_values_are_not_in_repr():
    config = ProviderConfig.from_dict(
        {
            "providers": [
                {
                    "name": "a",
                    "execConfig": {
                        "command": "x",
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "env": [{"name": "PASSWORD", "value": "hunter2"}],
                    },
                }
            ]
        }
    )
    assert "hunter2" not in repr(config)
