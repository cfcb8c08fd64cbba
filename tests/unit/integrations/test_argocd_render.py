"""The Argo CD sync's pure parts: which profile gets which Secret, and the Secret itself."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from cluster_inventory.api.constants import ANNOTATION_PROFILE, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.integrations.sync._assignment import RenderError
from cluster_inventory.integrations.sync._ownership import fingerprint
from cluster_inventory.integrations.sync.argocd import (
    ANNOTATION_ACCESS_PROVIDER,
    LABEL_PROFILE_NAMESPACE,
    LABEL_SECRET_TYPE,
    assign_cluster_secrets,
    render_cluster_secret,
    secret_name,
)
from tests.support.data.access_profiles import CA, profile, providers


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_secret_has_argo_35_exec_provider_shape_labels_and_no_credential() -> None:
    p = profile(
        labels={"env": "prod", LABEL_INVENTORY_MEMBER_ID: "m-1"},
        **{"tls-server-name": "c1.internal"},
    )
    secret = render_cluster_secret(
        p, providers(installHint="install cluster-inventory"), namespace="argocd"
    )
    assert secret["metadata"]["name"] == "cluster-team-a-c1"
    assert secret["metadata"]["namespace"] == "argocd"
    assert secret["metadata"]["labels"] == {
        "env": "prod",
        LABEL_INVENTORY_MEMBER_ID: "m-1",
        LABEL_SECRET_TYPE: "cluster",
        LABEL_PROFILE_NAMESPACE: "team-a",
    }
    assert secret["metadata"]["annotations"] == {
        ANNOTATION_PROFILE: "team-a/c1",
        ANNOTATION_ACCESS_PROVIDER: "secretreader",
    }
    data = decoded(secret)
    assert data["name"] == "c1"
    assert data["server"] == "https://10.0.0.1:6443"
    assert json.loads(data["config"]) == {
        "execProviderConfig": {
            "command": "/usr/local/bin/cluster-inventory-secretreader",
            "args": ["--namespace", "team-a"],
            "env": {"KUBECONFIG": "/etc/hub/kubeconfig"},
            "apiVersion": "client.authentication.k8s.io/v1",
            "installHint": "install cluster-inventory",
            "provideClusterInfo": True,
            "config": {"clusterName": "c1"},
        },
        "tlsClientConfig": {
            "insecure": False,
            "serverName": "c1.internal",
            "caData": base64.b64encode(CA).decode(),
        },
    }
    assert set(data) == {"name", "server", "config"}


def test_rendering_is_deterministic_so_the_fingerprint_is_stable() -> None:
    one = render_cluster_secret(profile(), providers(), namespace="argocd")
    two = render_cluster_secret(profile(), providers(), namespace="argocd")
    assert fingerprint(one) == fingerprint(two)
    changed = render_cluster_secret(
        profile(server="https://10.0.0.2:6443"), providers(), namespace="argocd"
    )
    assert fingerprint(changed) != fingerprint(one)


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (
            profile(provider="other"),
            "status.accessProviders",
            "no access provider matches",
        ),
        (
            profile(ca="not base64!"),
            "status.accessProviders[name=secretreader].cluster.certificate-authority-data",
            "not base64",
        ),
        (
            profile(ca=base64.b64encode(b"-----BEGIN NOTHING-----\n").decode()),
            "status.accessProviders[name=secretreader].cluster.certificate-authority-data",
            "does not hold a PEM certificate",
        ),
        (
            profile(**{"insecure-skip-tls-verify": True}),
            "status.accessProviders[name=secretreader].cluster.insecure-skip-tls-verify",
            "insecure-skip-tls-verify: is true",
        ),
    ],
)
def test_an_unrenderable_profile_is_an_error_naming_the_field(
    bad: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(RenderError) as caught:
        render_cluster_secret(bad, providers(), namespace="argocd")
    assert caught.value.profile == "team-a/c1"
    assert caught.value.field == field
    assert words in str(caught.value)
    assert "team-a/c1" in str(caught.value)
    assert str(caught.value).count(field) == 1  # said once, not as field and in the problem


def test_member_id_dedupe_keeps_the_first_inventory_and_name_clashes_get_the_namespace() -> None:
    profiles = [
        profile("c1", "team-a", labels={LABEL_INVENTORY_MEMBER_ID: "m-1"}),
        profile("c2", "team-a", labels={LABEL_INVENTORY_MEMBER_ID: "m-2"}),
        profile("c3", "team-a"),
        # the same member as team-a/c1 in a second inventory: no second Secret
        profile("c1", "team-b", labels={LABEL_INVENTORY_MEMBER_ID: "m-1"}),
        # another member called c2 in team-b: both get <namespace>-<name>
        profile("c2", "team-b", labels={LABEL_INVENTORY_MEMBER_ID: "m-9"}),
        # no member id: never deduplicated
        profile("c3", "team-b"),
    ]
    plan = assign_cluster_secrets(profiles)
    assert {n: (a.profile, a.display_name) for n, a in plan.items()} == {
        "cluster-team-a-c1": ("team-a/c1", "c1"),
        "cluster-team-a-c2": ("team-a/c2", "team-a-c2"),
        "cluster-team-a-c3": ("team-a/c3", "team-a-c3"),
        "cluster-team-b-c2": ("team-b/c2", "team-b-c2"),
        "cluster-team-b-c3": ("team-b/c3", "team-b-c3"),
    }


def test_long_names_are_cut_and_stay_unique() -> None:
    a = secret_name("ns", "x" * 250 + "a")
    b = secret_name("ns", "x" * 250 + "b")
    assert len(a) <= 253 and len(b) <= 253 and a != b
    assert secret_name("ns", "short") == "cluster-ns-short"
