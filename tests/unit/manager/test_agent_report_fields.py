"""Every field of an agent's report checked before it is copied (pure: ``agent_report_fields``).

Each field at its bound is let through and past it keeps its last good value (or is left
out when there is none), with a problem naming the field. Whatever the MemberReport CRD
accepts, the profile status the manager builds from it validates against the ClusterProfile
models (v1alpha1 and v1alpha2) and never holds a key.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_inventory import api
from cluster_inventory.api import label_value_problem, v1alpha2
from cluster_inventory.api.advertised_urls import AddressPolicy
from cluster_inventory.api.constants import CONDITION_REPORT_VALID, REASON_INVALID_REPORT_FIELD
from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.members.agent_member import advertised_connection, agent_observation
from cluster_inventory.manager.rules.agent_report_fields import (
    CheckedReport,
    ReportBounds,
    check_report,
)
from cluster_inventory.manager.rules.status import access_provider, build_status
from cluster_inventory.testing import CertificateAuthority

NOW = dt.datetime(2026, 11, 27, 8, 0, tzinfo=dt.UTC)
PEM = CertificateAuthority("report-ca").cert_pem
BOUNDS = ReportBounds(ca_max_bytes=len(PEM), properties_max=2, property_value_max=8, message_max=10)
KEY = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _good(**changes: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "memberID": "u" * 63,
        "kubernetesVersion": "v1.36.3",
        "server": "https://edge.example.test:6443",
        "certificateAuthorityData": _b64(PEM),
        "proxyURL": "http://proxy.example.test:3128",
        "apiServerHealth": {"status": "True", "reason": "APIServerReady", "message": "m" * 10},
        "properties": [
            {
                "name": "a.example.test",
                "value": "v" * 8,
                "lastObservedTime": "2026-11-27T07:00:00Z",
            },
            {"name": "b.example.test", "value": "b"},
        ],
    }
    status.update(changes)
    return status


def _check(status: dict[str, Any], last: CheckedReport | None = None) -> CheckedReport:
    return check_report(status, last.fields if last else None, BOUNDS, NOW)


def test_every_field_at_its_bound_is_copied() -> None:
    checked = _check(_good())
    assert checked.problems == ()
    f = checked.fields
    assert (f.member_id, f.version, f.server) == ("u" * 63, "v1.36.3", _good()["server"])
    assert f.ca_data == PEM and f.proxy_url == "http://proxy.example.test:3128"
    assert f.health is not None and f.health.message == "m" * 10
    assert f.properties is not None and f.properties[0].value == "v" * 8
    assert checked.condition().status == "True"


@pytest.mark.parametrize(
    ("field", "changes", "attr"),
    [
        ("status.memberID", {"memberID": "u" * 64}, "member_id"),
        ("status.memberID", {"memberID": "-starts-with-a-dash"}, "member_id"),
        ("status.kubernetesVersion", {"kubernetesVersion": "1.36.3"}, "version"),
        ("status.kubernetesVersion", {"kubernetesVersion": "v1.36.3\x1b[2J"}, "version"),
        ("status.server", {"server": "http://edge.example.test"}, "server"),
        ("status.server", {"server": "https://169.254.169.254"}, "server"),
        ("status.server", {"server": "https://[fe80::1]:6443"}, "server"),
        ("status.server", {"server": "https://2852039166"}, "server"),  # 169.254.169.254
        ("status.server", {"server": "https://metadata.google.internal"}, "server"),
        ("status.server", {"server": "https://u:p@edge.example.test"}, "server"),
        ("status.server", {"server": "https://edge.example.test/?token=x"}, "server"),
        ("status.server", {"server": "https://" + "e" * 2048}, "server"),
        ("status.server", {"server": "edge.example.test:6443"}, "server"),
        ("status.server", {"server": "https://0.0.0.0"}, "server"),
        ("status.proxyURL", {"proxyURL": "ftp://proxy.example.test"}, "proxy_url"),
        ("status.proxyURL", {"proxyURL": "socks5://[fd00:ec2::254]:1080"}, "proxy_url"),
        ("status.proxyURL", {"proxyURL": "http://user:pw@proxy.example.test"}, "proxy_url"),
        ("status.certificateAuthorityData", {"certificateAuthorityData": "%%%"}, "ca_data"),
        (
            "status.certificateAuthorityData",
            {"certificateAuthorityData": _b64(PEM + b" ")},  # one byte past the bound
            "ca_data",
        ),
        ("status.certificateAuthorityData", {"certificateAuthorityData": _b64(KEY)}, "ca_data"),
        (
            "status.certificateAuthorityData",
            {"certificateAuthorityData": _b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n")},
            "ca_data",
        ),
        (
            "status.certificateAuthorityData",
            {
                "certificateAuthorityData": _b64(
                    b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
                )
            },
            "ca_data",
        ),
        (
            "status.properties",
            {"properties": [{"name": n, "value": "v"} for n in "xyz"]},
            "properties",
        ),
        ("status.properties", {"properties": "a=b"}, "properties"),
    ],
)
def test_a_field_past_its_bound_keeps_its_last_good_value(
    field: str, changes: dict[str, Any], attr: str
) -> None:
    good = _check(_good())
    bad = _check(_good(**changes), good)
    assert [p.field for p in bad.problems] == [field]
    assert getattr(bad.fields, attr) == getattr(good.fields, attr)
    assert "last good value is kept" in str(bad.problems[0])
    condition = bad.condition()
    assert (condition.status, condition.reason) == ("False", REASON_INVALID_REPORT_FIELD)
    assert condition.message.startswith(f"{field}: ")
    # The other fields still flow.
    if attr != "version":
        moved = _check(_good(**{**changes, "kubernetesVersion": "v1.36.4"}), good)
        assert moved.fields.version == "v1.36.4"
    # No value refused is quoted back (a URL may hold a password).
    for value in changes.values():
        if isinstance(value, str) and len(value) > 3:
            assert value not in condition.message


def test_a_first_report_bad_in_a_field_leaves_it_out() -> None:
    checked = _check(_good(server="https://169.254.169.254", memberID="bad/id"))
    assert checked.fields.server is None and checked.fields.member_id is None
    assert advertised_connection("edge-1", checked.fields) is None
    assert all("left out (no good value yet)" in str(p) for p in checked.problems)
    assert checked.fields.version == "v1.36.3"  # the rest flows
    again = _check(_good(), checked)
    assert again.problems == () and again.fields.server == _good()["server"]


def test_a_field_no_longer_reported_is_no_longer_copied() -> None:
    good = _check(_good())
    status = _good()
    del status["proxyURL"], status["certificateAuthorityData"]
    later = _check(status, good)
    assert later.problems == ()
    assert later.fields.proxy_url is None and later.fields.ca_data is None


def test_a_refused_reason_still_carries_the_status() -> None:
    """The profile follows the report's False: a refused reason is replaced, not the status."""
    good = _check(_good())
    health = {"status": "False", "reason": "etcd is down!", "message": "[-]etcd"}
    checked = _check(_good(apiServerHealth=health), good)
    assert checked.fields.health is not None
    assert (checked.fields.health.status, checked.fields.health.reason) == (
        "False",
        "AgentReported",
    )
    assert checked.fields.health.message == "[-]etcd"
    assert [p.field for p in checked.problems] == ["status.apiServerHealth.reason"]


def test_a_message_past_its_bound_is_not_copied_and_the_status_is() -> None:
    health = {"status": "False", "reason": "ReadyzCheckFailed", "message": "m" * 11}
    checked = _check(_good(apiServerHealth=health))
    assert checked.fields.health is not None
    assert checked.fields.health.status == "False"
    assert "m" * 11 not in checked.fields.health.message
    assert CONDITION_REPORT_VALID in checked.fields.health.message
    assert [p.field for p in checked.problems] == ["status.apiServerHealth.message"]


def test_a_status_that_is_no_condition_status_keeps_the_last_health() -> None:
    good = _check(_good())
    checked = _check(_good(apiServerHealth={"status": "Maybe"}), good)
    assert checked.fields.health == good.fields.health
    assert [p.field for p in checked.problems] == ["status.apiServerHealth.status"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "a.example.test", "value": "v" * 9}, "value is 9 characters"),
        ({"name": "a.example.test", "value": ""}, "value"),
        (
            {"name": "a.example.test", "value": "w", "lastObservedTime": "0001-01-01T00:30:00Z"},
            "1970",
        ),
        (
            {
                "name": "a.example.test",
                "value": "w",
                "lastObservedTime": "9999-12-31T23:00:00-02:00",
            },
            "1970",
        ),
        (
            {"name": "a.example.test", "value": "w", "lastObservedTime": "yesterday"},
            "lastObservedTime",
        ),
        ({"name": "a" * 254, "value": "w"}, "name"),
    ],
)
def test_a_bad_property_keeps_its_last_good_entry_and_the_others_flow(
    entry: dict[str, Any], problem: str
) -> None:
    good = _check(_good())
    properties = [entry, {"name": "b.example.test", "value": "c"}]
    checked = _check(_good(properties=properties), good)
    assert len(checked.problems) == 1 and problem in checked.problems[0].problem
    assert checked.fields.properties is not None
    values = {p.name: p.value for p in checked.fields.properties}
    assert values["b.example.test"] == "c"
    if entry["name"] == "a.example.test":
        assert values["a.example.test"] == "v" * 8


def test_a_property_without_a_time_keeps_the_one_first_seen_while_its_value_holds() -> None:
    first = check_report(_good(), None, BOUNDS, NOW)
    later = check_report(_good(), first.fields, BOUNDS, NOW + dt.timedelta(hours=1))
    assert {p.name: p.observed for p in later.fields.properties or ()}["b.example.test"] == NOW
    changed = _good(properties=[{"name": "b.example.test", "value": "new"}])
    moved = check_report(changed, later.fields, BOUNDS, NOW + dt.timedelta(hours=1))
    assert {p.name: p.observed for p in moved.fields.properties or ()}["b.example.test"] > NOW


def test_a_ca_bundle_keeps_its_certificates_only() -> None:
    bundle = b"# Issuer: edge\n" + PEM + b"\ntrailing words\n"
    bounds = ReportBounds(ca_max_bytes=len(bundle))
    checked = check_report(_good(certificateAuthorityData=_b64(bundle)), None, bounds, NOW)
    assert checked.problems == ()
    assert checked.fields.ca_data == PEM


def test_loopback_and_link_local_follow_the_managers_policy() -> None:
    strict = ReportBounds(addresses=AddressPolicy(allow_loopback=False))
    loose = ReportBounds(addresses=AddressPolicy(allow_link_local=True))
    for server in ("https://127.0.0.1:6443", "https://[::1]:6443", "https://localhost:6443"):
        assert check_report({"server": server}, None, ReportBounds(), NOW).problems == ()
        assert check_report({"server": server}, None, strict, NOW).problems
    for server in ("https://169.254.169.254", "https://metadata.goog", "https://[fe80::1]"):
        assert check_report({"server": server}, None, loose, NOW).problems == ()


def test_the_condition_lists_twenty_problems_and_counts_the_rest() -> None:
    properties = [{"name": f"p{i}", "value": "v" * 9} for i in range(25)]
    bounds = ReportBounds(properties_max=30, property_value_max=8)
    message = check_report({"properties": properties}, None, bounds, NOW).condition().message
    assert message.count("status.properties[") == 20 and message.endswith("and 5 more")


def test_the_bounds_come_from_the_managers_configuration() -> None:
    config = ManagerConfig(
        agent_report_max_ca_bytes=1,
        agent_report_max_properties=2,
        agent_report_max_property_value=3,
        agent_report_max_message=4,
        agent_report_allow_loopback=False,
        agent_report_allow_link_local=True,
    )
    assert config.report_bounds == ReportBounds(
        ca_max_bytes=1,
        properties_max=2,
        property_value_max=3,
        message_max=4,
        addresses=AddressPolicy(allow_loopback=False, allow_link_local=True),
    )


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"agent_report_max_property_value": 1025}, "agent_report_max_property_value"),
        ({"agent_report_max_message": 32769}, "agent_report_max_message"),
        ({"agent_report_max_ca_bytes": 0}, "agent_report_max_ca_bytes"),
        ({"agent_report_max_properties": 0}, "agent_report_max_properties"),
    ],
)
def test_bounds_past_the_profiles_own_limits_are_refused(
    changes: dict[str, int], field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        ManagerConfig(**changes)  # type: ignore[arg-type]


# What the MemberReport CRD accepts (its types and lengths), anything else a member could say.
_any_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
_urlish = st.one_of(
    _any_text,
    st.builds(
        lambda scheme, host, rest: f"{scheme}://{host}{rest}",
        st.sampled_from(["https", "http", "socks5", "ftp", "HTTPS", ""]),
        st.sampled_from(
            [
                "edge.example.test",
                "127.0.0.1",
                "169.254.169.254",
                "[fd00:ec2::254]",
                "[::ffff:169.254.169.254]",
                "0x7f.1",
                "metadata.google.internal",
                "u:p@h",
                "",
            ]
        ),
        st.sampled_from(["", ":6443", ":99999", "/k8s/c-1", "?a=b", "#f", "\n", " x"]),
    ),
)
_statuses = st.fixed_dictionaries(
    {},
    optional={
        "memberID": st.one_of(_any_text, st.text("abc-_.", max_size=70)),
        "kubernetesVersion": st.one_of(
            _any_text, st.from_regex(r"v[0-9]\.[0-9]{1,2}\.[0-9]", fullmatch=True)
        ),
        "server": _urlish,
        "proxyURL": _urlish,
        "certificateAuthorityData": st.one_of(
            st.sampled_from([_b64(PEM), _b64(KEY), _b64(PEM + KEY), "%", ""]),
            st.binary(max_size=64).map(_b64),
        ),
        "apiServerHealth": st.fixed_dictionaries(
            {"status": st.sampled_from(["True", "False", "Unknown"])},
            optional={"reason": _any_text, "message": _any_text},
        ),
        "properties": st.lists(
            st.fixed_dictionaries(
                {"name": st.text(min_size=1, max_size=40), "value": _any_text},
                optional={
                    "lastObservedTime": st.one_of(
                        st.datetimes(timezones=st.timezones()).map(lambda t: t.isoformat()),
                        st.sampled_from(["0001-01-01T00:30:00Z", "9999-12-31T23:59:59-01:00"]),
                    )
                },
            ),
            max_size=4,
            unique_by=lambda p: p["name"],
        ),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_statuses, second=_statuses)
def test_whatever_the_report_says_the_profile_status_is_one_the_clusterprofile_schema_takes(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    bounds = ReportBounds(ca_max_bytes=len(PEM) * 2, properties_max=3, message_max=50)
    checked = None
    for status in (first, second):
        checked = check_report(status, checked.fields if checked else None, bounds, NOW)
        obs = agent_observation("edge-1", checked, None)
        reach = advertised_connection("edge-1", checked.fields)
        provider = access_provider("secretreader", reach, "edge-1") if reach else None
        built = build_status(obs, provider, None, NOW)
        for model in (api.ClusterProfileStatus, v1alpha2.ClusterProfileStatus):
            model.model_validate(built)  # raises on anything the CRD would refuse
        if obs.member_id is not None:
            assert label_value_problem(obs.member_id, required=True) is None
        for p in built.get("accessProviders") or ():
            ca = base64.b64decode(p["cluster"].get("certificate-authority-data", ""))
            assert b"PRIVATE KEY" not in ca and len(ca) <= bounds.ca_max_bytes
            assert "@" not in p["cluster"]["server"].split("/")[2]


class _Hub:
    """Stands in for the hub's ``ApiClient``: records each Event created."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def call_api(self, path: str, method: str, **kwargs: Any) -> dict[str, Any]:
        self.events.append(kwargs["body"])
        return {}


async def test_refused_fields_are_one_warning_event_on_the_report_per_change() -> None:
    from prometheus_client import CollectorRegistry

    from cluster_inventory.manager._metrics import ManagerMetrics
    from cluster_inventory.manager.controllers.findings import ManagerFindings

    hub = _Hub()
    reports = ManagerFindings(
        hub,  # type: ignore[arg-type]
        ManagerMetrics.for_registry(CollectorRegistry()),
        identity="replica-1",
        now=lambda: NOW,
    )
    report = {"metadata": {"name": "edge-1", "namespace": "ns", "uid": "u1"}}
    bad = _check(_good(server="http://edge.example.test"))
    for _ in range(3):
        await reports.report_problems(report, bad)
    [event] = hub.events
    assert (event["type"], event["reason"]) == ("Warning", REASON_INVALID_REPORT_FIELD)
    assert event["regarding"] == {
        "apiVersion": "cluster-inventory.dev/v1alpha1",
        "kind": "MemberReport",
        "namespace": "ns",
        "name": "edge-1",
        "uid": "u1",
    }
    assert event["note"].startswith("status.server: the scheme is http")
    await reports.report_problems(report, _check(_good()))  # good again: forgotten
    await reports.report_problems(report, bad)
    assert len(hub.events) == 2


# -- the cluster proxy (docs/cluster-proxy.md) ------------------------------------------------

PROXY = "http://cluster-inventory-proxy.cluster-inventory-system.svc:8090"


def test_a_member_behind_the_cluster_proxy_is_reached_through_it_with_tls_end_to_end() -> None:
    checked = _check(_good(server=None, clusterProxy=True, tlsServerName="kubernetes.default.svc"))
    assert checked.problems == ()
    reach = advertised_connection("edge-1", checked.fields, PROXY)
    assert reach is not None
    provider = access_provider("secretreader", reach, "edge-1")
    cluster = provider["cluster"]
    # The member is the proxy's user; server is the name its certificate holds, so a client
    # that leaves tls-server-name out (pkg/access) verifies the right name all the same.
    assert cluster["server"] == "https://kubernetes.default.svc"
    assert cluster["proxy-url"] == PROXY.replace("http://", "http://edge-1@")
    assert "tls-server-name" not in cluster
    assert base64.b64decode(cluster["certificate-authority-data"]) == PEM
    v1alpha2.Cluster.model_validate(cluster)  # the ClusterProfile schema takes it


def test_without_a_certificate_name_the_connect_target_names_the_member() -> None:
    checked = _check(_good(server=None, clusterProxy=True))
    reach = advertised_connection("edge-1", checked.fields, PROXY)
    assert reach is not None
    assert (reach.server, reach.proxy_url) == ("https://edge-1", PROXY)  # CONNECT edge-1:443


def test_a_certificate_name_is_held_to_the_servers_address_policy() -> None:
    # Behind the proxy it becomes the profile's server host: a consumer that left the proxy
    # out would dial it.
    checked = _check(_good(clusterProxy=True, tlsServerName="169.254.169.254"))
    [problem] = checked.problems
    assert problem.field == "status.tlsServerName"
    assert checked.fields.tls_server_name is None


def test_without_the_proxy_url_the_manager_gives_the_advertised_server() -> None:
    checked = _check(_good(clusterProxy=True, tlsServerName="kubernetes.default.svc"))
    reach = advertised_connection("edge-1", checked.fields, None)
    assert reach is not None and reach.server == _good()["server"]
    assert reach.tls_server_name is None
    no_server = _check(_good(server=None, clusterProxy=True))
    assert advertised_connection("edge-1", no_server.fields, None) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tlsServerName", "name with space"),
        ("tlsServerName", "*.wildcard.example"),
        ("tlsServerName", "x" * 254),
        ("tlsServerName", "evil\u202eexample"),
        ("clusterProxy", "yes"),
    ],
)
def test_a_bad_proxy_field_is_refused_naming_it(field: str, value: object) -> None:
    checked = _check(_good(**{field: value}))
    [problem] = checked.problems
    assert problem.field == f"status.{field}"
    assert str(value) not in str(problem)
