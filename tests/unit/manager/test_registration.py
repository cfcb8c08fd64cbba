import base64

import pytest
import yaml

from cluster_inventory.manager import (
    RegistrationError,
    parse_registration_secret,
    registration_secret,
)
from cluster_inventory.manager.config import ManagerConfig

KUBECONFIG = yaml.safe_dump(
    {
        "clusters": [{"name": "c", "cluster": {"server": "https://m:6443"}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
)


def test_round_trip():
    secret = registration_secret("m1", "ns", KUBECONFIG, ["prod", "dev"], display_name="Member 1")
    reg = parse_registration_secret(secret)
    assert reg.name == "m1"
    assert reg.clustersets == ("prod", "dev")
    assert reg.connection.server == "https://m:6443"
    assert reg.display_name == "Member 1"
    assert "secret-token" not in repr(reg)


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (lambda s: s["data"].pop("kubeconfig"), "data.kubeconfig", "missing"),
        (lambda s: s["data"].update(kubeconfig="!!!"), "data.kubeconfig", "base64"),
        (
            lambda s: s["data"].update(kubeconfig=base64.b64encode(b"a: [").decode()),
            "data.kubeconfig",
            "YAML",
        ),
        (
            lambda s: s["data"].update(kubeconfig=base64.b64encode(b"clusters: []").decode()),
            "data.kubeconfig",
            "current-context",
        ),
        (
            lambda s: s["metadata"]["annotations"].update(
                {"cluster-inventory.dev/clustersets": " , "}
            ),
            "metadata.annotations[cluster-inventory.dev/clustersets]",
            "no cluster set",
        ),
        (lambda s: s["metadata"].update(name="Bad_Name"), "metadata.name", "DNS-1123"),
    ],
)
def test_bad_secret_names_the_field(mutate, field, words):
    secret = registration_secret("m1", "ns", KUBECONFIG, ["prod"])
    mutate(secret)
    with pytest.raises(RegistrationError) as info:
        parse_registration_secret(secret)
    assert info.value.field == field
    assert words in str(info.value)
    assert "Secret ns/" in str(info.value)
    assert "secret-token" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [{"name": "Not A Label"}, {"token_lifetime": 60}, {"rotation_fraction": 1.5}, {"workers": 0}],
)
def test_config_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        ManagerConfig(**kwargs)
