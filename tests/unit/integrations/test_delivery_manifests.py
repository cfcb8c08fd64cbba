"""Delivery's pure parts: reading manifests, the apply order, result tables."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cluster_inventory.cli.apply import render_results
from cluster_inventory.integrations.delivery import (
    ApplySet,
    Manifest,
    ManifestError,
    ObjectResult,
    apply_order,
    load_manifests,
)


def m(kind: str, name: str, api: str = "v1", ns: str | None = None) -> Manifest:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return Manifest(obj={"apiVersion": api, "kind": kind, "metadata": meta}, source=name)


def test_crds_then_namespaces_then_the_rest_in_file_order():
    crd = m("CustomResourceDefinition", "crd", "apiextensions.k8s.io/v1")
    objs = [
        m("ConfigMap", "c1", ns="x"),
        m("Namespace", "x"),
        crd,
        m("Widget", "w", "e.com/v1"),
        m("ConfigMap", "c2"),
    ]
    assert [[o.name for o in phase] for phase in apply_order(objs)] == [
        ["crd"],
        ["x"],
        ["c1", "w", "c2"],
    ]
    assert apply_order([m("ConfigMap", "only")]) == [[m("ConfigMap", "only")]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: ConfigMap\nmetadata: {name: a}\n", "-#1: apiVersion is missing"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "-#1: kind is missing"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n",
            "-#1: ConfigMap has no metadata.name",
        ),
        ("- a\n- b\n", "-#1: a manifest must be a mapping, not list"),
        ("a: [\n", "-: not valid YAML"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "-#2: configmap/a is also defined in -#1",
        ),
    ],
)
def test_bad_manifests_are_refused_naming_the_document_and_field(text, message):
    with pytest.raises(ManifestError) as caught:
        load_manifests(["-"], stdin=io.StringIO(text))
    assert str(caught.value).startswith(message)


def test_missing_path_is_named(tmp_path: Path):
    with pytest.raises(ManifestError, match=f"{tmp_path / 'nope'}: no such file or directory"):
        load_manifests([tmp_path / "nope"])


def test_applyset_id_is_kubectls_format():
    applyset_id = ApplySet(name="web", namespace="prod").id
    assert applyset_id.startswith("applyset-") and applyset_id.endswith("-v1")
    assert len(applyset_id) == len("applyset-") + 43 + len("-v1")  # unpadded base64url of 32 bytes
    assert "=" not in applyset_id and "+" not in applyset_id and "/" not in applyset_id
    assert applyset_id != ApplySet(name="web", namespace="dev").id


def test_result_table_shows_messages_only_when_there_are_some():
    ok = ObjectResult(
        cluster="inv/a", object="configmap/x", namespace="ns", action="created", server="https://a"
    )
    bad = ObjectResult(
        cluster="inv/b",
        object="configmap/x",
        namespace="ns",
        action="failed",
        message="boom (422 Invalid)",
    )
    assert render_results([ok], wide=False).splitlines() == [
        "CLUSTER   NAMESPACE   OBJECT        RESULT",
        "inv/a     ns          configmap/x   created",
    ]
    lines = render_results([ok, bad], wide=False).splitlines()
    assert lines[0].split() == ["CLUSTER", "NAMESPACE", "OBJECT", "RESULT", "MESSAGE"]
    assert lines[1].endswith("<none>") and lines[2].endswith("boom (422 Invalid)")
    assert render_results([ok], wide=True).splitlines()[0].split()[-2:] == ["SERVER", "MESSAGE"]


def test_invalid_yaml_is_one_line_naming_the_file_and_line(tmp_path: Path):
    bad = tmp_path / "app.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n   x: [b\n")
    with pytest.raises(ManifestError) as caught:
        load_manifests([bad])
    message = str(caught.value)
    assert message.startswith(f"{bad}: not valid YAML at line 5, column 5: ")
    assert "\n" not in message and "<unicode string>" not in message
