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


def test_registrations_sharing_a_ca_load_it_once(monkeypatch):
    # Thousands of registrations issued by one fleet CA: the check that their TLS material
    # loads builds one context, the one their connections then share (kube.shared_ssl_context).
    from cluster_inventory.kube import _tls
    from cluster_inventory.testing import CertificateAuthority

    ca = CertificateAuthority("registration-check-ca").cert_pem
    built = []
    real = _tls.ssl_context_for

    def counting(conn):
        built.append(conn.server)
        return real(conn)

    monkeypatch.setattr(_tls, "ssl_context_for", counting)
    for i in range(5):
        kubeconfig = yaml.safe_load(KUBECONFIG)
        kubeconfig["clusters"][0]["cluster"] = {
            "server": f"https://m{i}:6443",
            "certificate-authority-data": base64.b64encode(ca).decode(),
        }
        kubeconfig["users"][0]["user"] = {"token": f"token-{i}"}
        secret = registration_secret(f"m{i}", "ns", yaml.safe_dump(kubeconfig), ["prod"])
        assert parse_registration_secret(secret).connection.ca_data == ca
    assert built == ["https://m0:6443"]

    kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(
        b"not a PEM bundle"
    ).decode()
    with pytest.raises(RegistrationError, match=r"m9: data\.kubeconfig: .*not a PEM bundle"):
        registration_secret("m9", "ns", yaml.safe_dump(kubeconfig), ["prod"])
