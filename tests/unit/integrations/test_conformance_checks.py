"""The conformance checks as pure functions: a good inventory passes, each break fails once."""

from __future__ import annotations

import base64
import copy
import html
from typing import Any

import pytest

from cluster_inventory.integrations.conformance import (
    Served,
    evaluate,
    render_html,
    render_text,
    report,
    required_failed,
)

SERVED = Served(served=True, namespaced=True, listable=True)
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def profile(name: str, member_id: str) -> dict[str, Any]:
    cond = {"status": "True", "reason": "Ok", "message": "fine", "lastTransitionTime": "x"}
    return {
        "metadata": {
            "name": name,
            "namespace": "inv",
            "labels": {
                "x-k8s.io/cluster-manager": "mgr",
                "multicluster.x-k8s.io/inventory-member-id": member_id,
            },
        },
        "spec": {"clusterManager": {"name": "mgr"}},
        "status": {
            "conditions": [
                {"type": "ControlPlaneHealthy", **cond},
                {"type": "Joined", **cond},
            ],
            "version": {"kubernetes": "v1.36.3"},
            "properties": [{"name": "region", "value": "eu"}],
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": "https://m:6443",
                        "certificate-authority-data": CA,
                        "extensions": [
                            {
                                "name": "client.authentication.k8s.io/exec",
                                "extension": {"clusterName": name},
                            }
                        ],
                    },
                }
            ],
        },
    }


GOOD = [profile("a", "id-a"), profile("b", "id-b")]


def _failing(served: Served, profiles: list[dict[str, Any]]) -> list[tuple[str, str]]:
    groups = evaluate(served, profiles)
    return [(g, t.desc) for g, tests in groups.items() for t in tests if not t.conformant]


def test_a_good_inventory_passes_every_check() -> None:
    assert _failing(SERVED, GOOD) == []
    doc = report(evaluate(SERVED, GOOD), namespace="inv", cluster_manager="mgr")
    assert not required_failed(doc)
    assert doc["Passed"] == doc["Total"] == 12
    assert doc["Groups"]["Required"][0]["Desc"].startswith("v1alpha2 ClusterProfile")


def _break(path: str, value: Any) -> list[dict[str, Any]]:
    broken = copy.deepcopy(GOOD)
    node: Any = broken[0]
    keys = [k.replace("~", "/") for k in path.split("/")]
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return broken


JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2ln"

CASES = [
    (
        "manager label",
        "metadata/labels/x-k8s.io~cluster-manager",
        "other",
        "Required",
        "equals spec",
    ),
    (
        "empty member id",
        "metadata/labels/multicluster.x-k8s.io~inventory-member-id",
        "",
        "Required",
        "non-empty",
    ),
    (
        "no member id",
        "metadata/labels/multicluster.x-k8s.io~inventory-member-id",
        KeyError,
        "Optional",
        "label is set",
    ),
    (
        "duplicate member id",
        "metadata/labels/multicluster.x-k8s.io~inventory-member-id",
        "id-b",
        "Optional",
        "at most once",
    ),
    ("no Joined", "status/conditions/1/type", "Other", "Optional", "conditions are present"),
    ("no version", "status/version/kubernetes", "", "Optional", "version.kubernetes"),
    (
        "a token in an extension",
        "status/accessProviders/0/cluster/extensions/0/extension/token",
        JWT,
        "Optional",
        "no credential",
    ),
    ("a JWT in an annotation", "metadata/annotations", {"note": JWT}, "Optional", "no credential"),
    (
        "a key as CA",
        "status/accessProviders/0/cluster/certificate-authority-data",
        base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----").decode(),
        "Optional",
        "no credential",
    ),
    (
        "a provider without server",
        "status/accessProviders/0/cluster/server",
        "",
        "Optional",
        "name a server",
    ),
    (
        "a duplicate property",
        "status/properties",
        [{"name": "r", "value": "1"}, {"name": "r", "value": "2"}],
        "Optional",
        "properties",
    ),
    (
        "a condition without message",
        "status/conditions/0/message",
        "",
        "Optional",
        "reason and a message",
    ),
]


@pytest.mark.parametrize(
    ("case", "path", "value", "group", "words"), CASES, ids=[c[0] for c in CASES]
)
def test_each_break_fails_its_own_check(
    case: str, path: str, value: Any, group: str, words: str
) -> None:
    broken = _break(path, value)
    failing = _failing(SERVED, broken)
    assert len(failing) >= 1, case
    assert any(g == group and words in desc for g, desc in failing), failing
    # a secret never reaches the report text
    doc = report(evaluate(SERVED, broken), namespace="inv", cluster_manager=None)
    assert JWT not in render_text(doc) + render_html(doc)


def test_label_paths_with_slashes() -> None:
    broken = copy.deepcopy(GOOD)
    broken[0]["metadata"]["labels"]["x-k8s.io/cluster-manager"] = "other"
    assert (
        "Required",
        "label x-k8s.io/cluster-manager equals spec.clusterManager.name",
    ) in _failing(SERVED, broken)


def test_not_served_or_empty_fails_the_required_api_checks() -> None:
    failing = _failing(Served(served=False, namespaced=False, listable=False), [])
    assert [g for g, _ in failing] == ["Required", "Required"]
    doc = report(
        evaluate(Served(served=False, namespaced=False, listable=False), []),
        namespace="x",
        cluster_manager=None,
    )
    assert required_failed(doc)
    assert "NOT CONFORMANT" in render_text(doc)


def test_the_html_page_is_self_contained_and_names_every_check() -> None:
    doc = report(evaluate(SERVED, GOOD), namespace="inv", cluster_manager="mgr")
    page = render_html(doc)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http://" not in page and "<link" not in page
    for group in doc["Groups"].values():
        for test in group:
            assert html.escape(test["Desc"]) in page
