"""How profiles print (cli/profiles.py) and the demo's plan (cli/demo.py), without a server."""

from __future__ import annotations

import datetime as dt

import pytest

from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo import INVENTORIES, Demo, demo_members, profile_table
from cluster_inventory.cli.profiles import (
    PROFILE_COLUMNS,
    WIDE_COLUMNS,
    access_provider_names,
    describe_profile,
    profile_row,
    properties_text,
)

NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)

PROFILE = {
    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
    "kind": "ClusterProfile",
    "metadata": {
        "name": "east",
        "namespace": "team-a",
        "creationTimestamp": "2026-11-23T11:55:00Z",
        "labels": {"x-k8s.io/cluster-manager": "ocm"},
    },
    "spec": {"displayName": "East", "clusterManager": {"name": "ocm"}},
    "status": {
        "version": {"kubernetes": "v1.36.3"},
        "conditions": [
            {"type": "ControlPlaneHealthy", "status": "False", "reason": "APIServerUnreachable"},
            {"type": "Joined", "status": "True", "reason": "CredentialAccepted"},
        ],
        "properties": [
            {"name": "region", "value": "eu-west-1"},
            {"name": "account-id", "value": "1"},
        ],
        "credentialProviders": [{"name": "legacy"}, {"name": "secretreader"}],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": "https://east:6443",
                    "certificate-authority-data": "QUJD",
                    "extensions": [
                        {
                            "name": "client.authentication.k8s.io/exec",
                            "extension": {"clusterName": "east"},
                        }
                    ],
                },
            }
        ],
    },
}


def test_a_row_follows_the_columns_and_kubectl_conventions() -> None:
    assert profile_row(PROFILE, now=NOW) == [
        "east", "ocm", "v1.36.3", "False", "secretreader,legacy", "5m",
    ]  # fmt: skip
    wide = profile_row(PROFILE, wide=True, namespace=True, now=NOW)
    assert len(wide) == 1 + len(PROFILE_COLUMNS) + len(WIDE_COLUMNS)
    assert wide[0] == "team-a"
    assert wide[-2:] == ["True", "account-id=1,region=eu-west-1"]


def test_a_profile_without_status_prints_none_cells() -> None:
    bare = {"metadata": {"name": "new", "creationTimestamp": "2026-11-23T11:59:30Z"}}
    row = profile_row(bare, wide=True, now=NOW)
    assert row == ["new", "", "", "", "", "30s", "", ""]
    assert format_table([*PROFILE_COLUMNS, *WIDE_COLUMNS], [row]).splitlines()[1].split() == [
        "new", "<none>", "<none>", "<none>", "<none>", "30s", "<none>", "<none>",
    ]  # fmt: skip


def test_access_providers_count_both_lists_once_access_first() -> None:
    assert access_provider_names(PROFILE) == ["secretreader", "legacy"]
    assert properties_text(PROFILE) == "account-id=1,region=eu-west-1"


def test_describe_shows_every_section_and_no_ca_body() -> None:
    event = {
        "type": "Warning",
        "reason": "Unreachable",
        "eventTime": "2026-11-23T11:58:00Z",
        "reportingController": "cluster-inventory",
        "note": "probe failed",
    }
    text = describe_profile(PROFILE, [event], now=NOW)
    lines = text.splitlines()
    assert lines[0] == "Name:             east"
    assert "Cluster Manager:  ocm" in lines
    assert any(
        line.split()[:3] == ["ControlPlaneHealthy", "False", "APIServerUnreachable"]
        for line in lines
    )
    assert "  CA:               4 bytes (base64)" in lines
    assert "QUJD" not in text
    assert any(line.split()[:3] == ["Warning", "Unreachable", "2m"] for line in lines)
    # The deprecated list's "secretreader" is shadowed by accessProviders (pkg/access).
    assert [line.strip() for line in lines if line.strip().startswith("Name:")][1:] == [
        "Name:             secretreader",
        "Name:             legacy",
    ]


def test_describe_prints_an_event_seen_again_as_kubectl_does() -> None:
    """One Event with a series (client-go's recorder counts repeats there): its count, the
    last time and the first, oldest first by the last time; From is the controller."""
    seen_again = {
        "metadata": {"name": "east.a", "creationTimestamp": "2026-11-23T11:00:00Z"},
        "type": "Warning",
        "reason": "ControlPlaneUnhealthy",
        "note": "  member east: /readyz failed  ",
        "reportingController": "cluster-inventory.dev/manager",
        "reportingInstance": "replica-1",
        "eventTime": "2026-11-23T11:00:00.000000Z",
        "series": {"count": 7, "lastObservedTime": "2026-11-23T11:58:00.000000Z"},
    }
    once = {
        "metadata": {"name": "east.b"},
        "type": "Normal",
        "reason": "ControlPlaneHealthy",
        "note": "member east: /readyz ok",
        "reportingController": "cluster-inventory.dev/manager",
        "eventTime": "2026-11-23T11:30:00.000000Z",
    }
    lines = describe_profile(PROFILE, [seen_again, once], now=NOW).splitlines()
    rows = lines[lines.index("Events:") + 3 :]
    assert rows[0].split()[:3] == ["Normal", "ControlPlaneHealthy", "30m"]
    assert rows[1].split()[:6] == ["Warning", "ControlPlaneUnhealthy", "2m", "(x7", "over", "60m)"]
    assert rows[1].endswith("cluster-inventory.dev/manager  member east: /readyz failed")


def test_describe_says_none_for_empty_sections() -> None:
    text = describe_profile({"metadata": {"name": "new"}})
    for section in ("Conditions", "Properties", "Access Providers", "Events"):
        assert f"{section}:  <none>" in text


def test_demo_members_cover_both_inventories_and_overlap() -> None:
    members = demo_members(3)
    assert [m.clustersets for m in members] == [("prod",), ("prod", "staging"), ("staging",)]
    assert len({m.account_id for m in members}) == 3
    with pytest.raises(ValueError, match="members: 0 is below 1"):
        demo_members(0)


def test_the_demo_expects_one_profile_per_member_of_each_inventory_set() -> None:
    demo = Demo(3)
    assert demo.expected_profiles() == [
        ("team-a", "member1"),
        ("team-a", "member2"),
        ("team-b", "member2"),
        ("team-b", "member3"),
    ]
    assert demo.outage_member == "member3"
    assert [i.member_role for i in INVENTORIES] == ["edit", "view"]


def test_the_demo_table_has_the_columns_the_issue_names() -> None:
    text = profile_table([PROFILE])
    header, row = text.splitlines()
    assert header.split("   ")[0] == "NAMESPACE"
    assert [h.strip() for h in header.split("   ") if h.strip()] == [
        "NAMESPACE", "NAME", "VERSION", "HEALTHY", "JOINED", "PROPERTIES", "ACCESS PROVIDERS",
    ]  # fmt: skip
    assert row.split() == [
        "team-a", "east", "v1.36.3", "False", "CredentialAccepted", "account-id=1,region=eu-west-1",
        "secretreader,legacy",
    ]  # fmt: skip
