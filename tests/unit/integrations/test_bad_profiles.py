"""The bad-input campaign over ClusterProfiles written by others, as consumers read them.

Access resolution gives access settings or one AccessResolutionError; the Argo CD renderer a
Secret or one RenderError naming the profile and field; MultiKueue's and Argo CD's
assignment and placement's candidates read any profile without raising. Profiles are what
the CRD admits (up to 100 access providers, huge and unicode values, missing optional
fields) and, for the pure readers, also values of the wrong type.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.credentials import (
    AccessResolutionError,
    ClusterAccess,
    ProviderConfig,
    resolve_access,
)
from cluster_inventory.integrations.placement.choice import Candidate, PlacementSpec, choose
from cluster_inventory.integrations.sync._assignment import RenderError
from cluster_inventory.integrations.sync.argocd import assign_cluster_secrets, render_cluster_secret
from cluster_inventory.integrations.sync.multikueue import MultiKueueSync, render_multikueue_cluster
from tests.support.data.bad_input import CAMPAIGN, MARKER, campaign, check_outcome, hostile_profiles

SETTINGS = campaign(60)
TOKEN = f"{MARKER}env"

PROVIDERS = ProviderConfig.from_dict(
    {
        "providers": [
            {
                "name": name,
                "execConfig": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "/bin/plugin",
                    "env": [{"name": "HUB_TOKEN", "value": TOKEN}],
                },
                "profileSourcedCLIArgsPolicy": "Append",
                "profileSourcedEnvVarsPolicy": "Replace",
            }
            for name in ("secretreader", "p3", "p64", "☃")
        ]
    },
    source="providers.json",
)


def _name(profile: Any) -> str:
    meta = profile.get("metadata") if isinstance(profile, dict) else None
    return str(meta.get("name")) if isinstance(meta, dict) else ""


@SETTINGS
@given(st.one_of(hostile_profiles(), hostile_profiles(crd_valid=False)))
def test_access_resolves_or_names_profile_and_field(profile: dict[str, Any]) -> None:
    result = check_outcome(
        "resolve_access",
        lambda: resolve_access(profile, PROVIDERS),
        AccessResolutionError,
        field_of=lambda e: e.field,
        names="ClusterProfile ",
        secrets=[TOKEN],
    )
    if isinstance(result, ClusterAccess):
        assert result.server.startswith(("https://", "http://")) or result.server
        assert not result.insecure_skip_tls_verify
        assert TOKEN not in repr(result)


@SETTINGS
@given(st.one_of(hostile_profiles(), hostile_profiles(crd_valid=False)))
def test_argocd_secret_renders_or_names_profile_and_field(profile: dict[str, Any]) -> None:
    result = check_outcome(
        "Argo CD render",
        lambda: render_cluster_secret(profile, PROVIDERS, namespace="argocd"),
        RenderError,
        field_of=lambda e: e.field,
        names="ClusterProfile ",
        secrets=[TOKEN],
    )
    if isinstance(result, dict):
        assert len(result["metadata"]["name"]) <= 253
        for value in result["data"].values():
            base64.b64decode(value, validate=True)


@campaign(20)
@given(st.lists(st.one_of(hostile_profiles(), hostile_profiles(crd_valid=False)), max_size=3))
def test_assignment_and_placement_read_any_profile(profiles: list[dict[str, Any]]) -> None:
    for target, read in (
        ("Argo CD assign", assign_cluster_secrets),
        ("MultiKueue assign", lambda ps: MultiKueueSync.assign(None, ps)),  # type: ignore[arg-type]
        ("MultiKueue render", lambda ps: [render_multikueue_cluster(p) for p in ps]),
        ("placement", lambda ps: choose(PlacementSpec(), [Candidate.from_profile(p) for p in ps])),
    ):
        check_outcome(target, lambda read=read: read(profiles), (), field_of=str, names="")


def test_profile_counts_are_tallied():
    # The campaign's table reads these rows; a renamed target would silently drop out.
    before = CAMPAIGN.tried["resolve_access"]
    check_outcome(
        "resolve_access",
        lambda: resolve_access({"spec": {"clusterManager": {"name": "m"}}}, PROVIDERS),
        AccessResolutionError,
        field_of=lambda e: e.field,
        names="ClusterProfile ",
    )
    assert CAMPAIGN.tried["resolve_access"] == before + 1
