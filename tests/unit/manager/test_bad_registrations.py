"""The bad-input campaign over registrations: Secrets, static-file entries, Cluster API.

Each input parses to a valid registration or to one :class:`RegistrationError` naming the
object and the field; nothing else escapes, and no credential is quoted.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_inventory import kube
from cluster_inventory.manager import Registration, RegistrationError, parse_registration_secret
from cluster_inventory.manager.rules.registration import is_dns_label
from cluster_inventory.manager.sources.capi import cluster_registration, parse_capi_kubeconfig
from cluster_inventory.manager.sources.file import (
    FileRegistrationSource,
    parse_file_registrations,
)
from tests.support.data.bad_input import (
    broken_kubeconfigs,
    campaign,
    check_outcome,
    clusterset_values,
    hostile_values,
    kubeconfig_payloads,
    leaked,
    mistyped_registration_secrets,
    printable,
    registration_secrets,
)
from tests.support.data.strategies import dns_label

CAMPAIGN = campaign(80)


def _field(exc: RegistrationError) -> str:
    return exc.field


def assert_sound(reg: Registration, secrets: list[str], kubeconfig: str | None = None) -> None:
    """A registration the parser accepts is one the manager can use as it is.

    With the registration's kubeconfig text: verification is off only if it says so with a
    YAML boolean, and no file of the manager was read into the connection.
    """
    assert is_dns_label(reg.name)
    assert reg.clustersets and all(is_dns_label(s) for s in reg.clustersets)
    conn = reg.connection
    assert isinstance(conn.server, str) and conn.server.startswith(("https://", "http://"))
    assert isinstance(conn.insecure_skip_tls_verify, bool)
    for value in (conn.tls_server_name, conn.proxy_url, conn.token, conn.namespace):
        assert value is None or isinstance(value, str)
    assert isinstance(reg.display_name, str)
    assert not leaked(repr(reg), secrets)
    if kubeconfig is not None:
        if conn.insecure_skip_tls_verify:
            assert "insecure-skip-tls-verify: true" in kubeconfig
        # A Secret's kubeconfig may not make the manager read its own files.
        hostname = Path("/etc/hostname").read_bytes()
        assert hostname not in (conn.ca_data, conn.client_cert_data, conn.client_key_data)
        assert conn.token is None or conn.token != hostname.decode().strip()


def _kubeconfig_text(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["kubeconfig"]).decode()


@CAMPAIGN
@given(registration_secrets())
def test_registration_secret_is_valid_or_names_secret_and_field(
    case: tuple[dict[str, Any], list[str]],
) -> None:
    secret, secrets = case
    name = secret["metadata"]["name"]
    result = check_outcome(
        "registration Secret",
        lambda: parse_registration_secret(secret),
        RegistrationError,
        field_of=_field,
        names=f"Secret cluster-inventory-system/{name}",
        secrets=secrets,
    )
    if isinstance(result, Registration):
        assert_sound(result, secrets, _kubeconfig_text(secret))


@CAMPAIGN
@given(mistyped_registration_secrets())
def test_mistyped_registration_secret_is_valid_or_names_the_field(
    case: tuple[dict[str, Any], list[str]],
) -> None:
    secret, secrets = case
    result = check_outcome(
        "registration Secret (types)",
        lambda: parse_registration_secret(secret),
        RegistrationError,
        field_of=_field,
        names="Secret ",
        secrets=secrets,
    )
    if isinstance(result, Registration):
        assert_sound(result, secrets)


@st.composite
def file_entries(draw: st.DrawFn) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        entry["name"] = draw(st.one_of(dns_label, hostile_values))
    if draw(st.integers(0, 5)):
        entry["clustersets"] = draw(
            st.one_of(clusterset_values, st.lists(st.one_of(dns_label, hostile_values), max_size=3))
        )
    if draw(st.integers(0, 5)):
        entry["kubeconfig"] = draw(
            st.one_of(
                st.sampled_from(["member.yaml", "broken.yaml", "missing.yaml", ".", "/"]),
                hostile_values,
            )
        )
    for key in ("context", "displayName"):
        if draw(st.booleans()):
            entry[key] = draw(st.one_of(st.sampled_from(["x0", "x1", "nowhere"]), hostile_values))
    return entry


@CAMPAIGN
@given(
    doc=st.one_of(
        st.lists(st.one_of(file_entries(), hostile_values), max_size=4),
        st.fixed_dictionaries({"clusters": st.lists(file_entries(), max_size=4)}),
        hostile_values,
    ),
    member=broken_kubeconfigs(),
)
def test_file_entries_are_valid_or_name_file_and_field(
    tmp_path_factory: Any, doc: Any, member: tuple[Any, list[str]]
) -> None:
    folder = tmp_path_factory.mktemp("reg")
    kubeconfig, secrets = member
    (folder / "member.yaml").write_text(yaml.safe_dump(kubeconfig, allow_unicode=True))
    (folder / "broken.yaml").write_text("clusters: [")
    path = Path(folder / "clusters.yaml")
    entries = doc.get("clusters") if isinstance(doc, dict) else doc
    count = len(entries) if isinstance(entries, list) else 1

    def parse() -> tuple[dict[str, Registration], list[RegistrationError]]:
        good, bad = parse_file_registrations(doc, path)
        for error in bad:
            assert f"file {path}" in str(error)
            assert error.field
            assert not leaked(str(error), secrets), str(error)
        assert len(good) + len(bad) <= count
        return good, bad

    result = check_outcome(
        "file-source entries",
        parse,
        RegistrationError,
        field_of=_field,
        names=f"file {path}",
        secrets=secrets,
    )
    if isinstance(result, tuple):
        good, bad = result
        for error in bad:
            check_outcome(
                "file-source entry",
                lambda e=error: (_ for _ in ()).throw(e),
                RegistrationError,
                field_of=_field,
                names=f"file {path}",
                secrets=secrets,
            )
        for reg in good.values():
            assert_sound(reg, secrets)


@CAMPAIGN
@given(kubeconfig_payloads(), st.one_of(dns_label, st.sampled_from(["Bad_Name", "☃", "a" * 300])))
def test_capi_kubeconfig_secret_is_valid_or_names_secret_and_field(
    payload: tuple[Any, list[str]], name: str
) -> None:
    value, secrets = payload
    secret = {
        "metadata": {"name": f"{name}-kubeconfig", "namespace": "capi"},
        "data": {} if value is None else {"value": value},
    }
    check_outcome(
        "Cluster API kubeconfig Secret",
        lambda: parse_capi_kubeconfig(secret),
        RegistrationError,
        field_of=_field,
        names=f"Secret capi/{name}-kubeconfig",
        secrets=secrets,
    )


@CAMPAIGN
@given(
    name=st.one_of(dns_label, st.sampled_from(["Bad_Name", "☃", "a" * 300, ""])),
    labels=st.dictionaries(
        st.sampled_from(["cluster-inventory.dev/clusterset", "x"]), clusterset_values, max_size=2
    ),
    annotations=st.dictionaries(
        st.sampled_from(
            ["cluster-inventory.dev/clustersets", "cluster-inventory.dev/display-name"]
        ),
        st.one_of(clusterset_values, printable),
        max_size=2,
    ),
    spec=st.one_of(
        st.just({}),
        st.fixed_dictionaries({"topology": st.fixed_dictionaries({"version": hostile_values})}),
        st.fixed_dictionaries({"topology": hostile_values}),
    ),
    defaults=st.lists(dns_label, max_size=2),
)
def test_capi_cluster_is_valid_or_names_cluster_and_field(
    name: str, labels: dict[str, str], annotations: dict[str, str], spec: Any, defaults: list[str]
) -> None:
    cluster = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": "capi",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }
    result = check_outcome(
        "Cluster API Cluster",
        lambda: cluster_registration(
            cluster, None, default_clustersets=defaults, not_ready=("NotYet", "not yet")
        ),
        RegistrationError,
        field_of=_field,
        names=f"Cluster capi/{name}",
    )
    if isinstance(result, Registration):
        assert is_dns_label(result.name)
        assert all(isinstance(v, str) and len(v) <= 1024 for _, v in result.properties)


@settings(max_examples=20)
@given(registration_secrets())
def test_generated_credentials_carry_the_marker(case: tuple[dict[str, Any], list[str]]) -> None:
    # The campaign is only as good as its marker: every generated credential carries it.
    _, secrets = case
    assert all(leaked(s) for s in secrets)


def _secret_with(kubeconfig: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "m1",
            "namespace": "ns",
            "annotations": {"cluster-inventory.dev/clustersets": "prod"},
        },
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
    }


GOOD = {
    "clusters": [{"name": "c", "cluster": {"server": "https://m.example:6443"}}],
    "users": [{"name": "u", "user": {"token": "Cr3dM4rkerT"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}


def test_deeply_nested_kubeconfig_is_an_error_not_a_crash():
    # 200 KB of brackets: libyaml's loader overflowed the C stack (SIGSEGV) on this.
    with pytest.raises(RegistrationError, match="nests too deeply") as info:
        parse_registration_secret(_secret_with("[" * 100_000 + "]" * 100_000))
    assert info.value.field == "data.kubeconfig"


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ("users", {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
        ("users", {"client-certificate": "/etc/hostname", "client-key": "/etc/hostname"}),
        ("clusters", {"certificate-authority": "/etc/hostname"}),
    ],
)
def test_registration_kubeconfig_may_not_name_the_managers_files(entry, key):
    doc = copy.deepcopy(GOOD)
    target = doc[entry][0]["user" if entry == "users" else "cluster"]
    target.update(key)
    if entry == "users":
        target.pop("token")
    with pytest.raises(RegistrationError, match="file reference is not allowed") as info:
        parse_registration_secret(_secret_with(yaml.safe_dump(doc)))
    assert info.value.source == "Secret ns/m1"


@pytest.mark.parametrize("value", ["false", "no", 0, [False]])
def test_insecure_skip_tls_verify_must_be_a_boolean(value):
    # bool("false") is True: the quoted value used to turn verification off.
    doc = copy.deepcopy(GOOD)
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = value
    with pytest.raises(RegistrationError, match="insecure-skip-tls-verify must be true or false"):
        parse_registration_secret(_secret_with(yaml.safe_dump(doc)))


def test_file_entry_with_a_null_cluster_set_names_the_field(tmp_path):
    # ",".join([None]) raised TypeError out of the file source (the manager did not start).
    good, bad = parse_file_registrations(
        [{"name": "m1", "clustersets": [None], "kubeconfig": "k.yaml"}], tmp_path / "f.yaml"
    )
    assert not good
    assert [e.field for e in bad] == ["clusters[0].clustersets"]


def test_capi_version_longer_than_a_property_value_names_the_field():
    cluster = {
        "metadata": {"name": "wl", "namespace": "capi"},
        "spec": {"topology": {"version": "v" * 1025}},
    }
    with pytest.raises(RegistrationError) as info:
        cluster_registration(cluster, None, default_clustersets=("all",))
    assert info.value.field == "spec.topology.version"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # PyYAML's loader raised RecursionError out of start(): the manager did not run.
        ("[" * 2_000 + "]" * 2_000, "nested deeper than 100 levels"),
        # PyYAML's message spanned 7 lines and quoted the offending line.
        ('clusters:\n- name: a\n  kubeconfig: "x\n', "not valid YAML at line 4, column 1"),
    ],
)
async def test_file_source_that_is_not_yaml_is_one_error_line(tmp_path, text, words):
    path = tmp_path / "clusters.yaml"
    path.write_text(text)
    source = FileRegistrationSource(path)
    source.start(lambda: None)
    good, bad = source.snapshot()
    assert not good and not bad
    # A file that cannot be read is no empty fleet: the manager stops at start (issue 22).
    with pytest.raises(kube.SourceUnavailableError) as info:
        await source.wait_synced()
    assert info.value.source == f"registration file {path}"
    assert words in str(info.value)
    assert "\n" not in str(info.value)
