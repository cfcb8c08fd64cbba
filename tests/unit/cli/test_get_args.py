"""``get``'s small argument parser agrees with the typer command it stands in for."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from cluster_inventory.cli._get import _GET_OPTIONS, parse_get_args
from cluster_inventory.cli.app import app


def _typer_params(argv: list[str]) -> dict:
    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), "get")  # type: ignore[union-attr]
    ctx = command.make_context("get", list(argv))  # type: ignore[union-attr]
    return dict(ctx.params)


CASES = [
    [],
    ["alpha"],
    ["alpha", "-n", "team-a"],
    ["-nteam-a", "-o", "wide"],
    ["--namespace=team-a", "--output=json"],
    ["-A", "-l", "env=prod,tier!=db"],
    ["--all-namespaces", "--selector", "env in (a,b)"],
    ["-o", "jsonpath={.items[*].metadata.name}", "-n", "x"],
    ["-ojsonpath={.items[0]}"],
    ["--kubeconfig", "/tmp/k", "--context", "hub", "beta"],
    ["--kubeconfig=/tmp/k", "-n", "a", "-n", "b"],
    ["placementdecisions"],
    ["placementdecisions", "team-a-0", "-n", "x", "-o", "wide"],
    ["-A", "placementdecision", "-l", "multicluster.x-k8s.io/decision-key=p"],
    ["clusterprofiles", "alpha"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) or "none" for c in CASES])
def test_the_small_parser_reads_what_typer_reads(argv: list[str]) -> None:
    ours = parse_get_args(argv)
    assert ours is not None
    theirs = _typer_params(argv)
    assert ours == theirs


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["-n"], ["--nosuch"], ["a", "b", "c"], ["-A=yes"], ["--", "x"], ["-h"]],
)
def test_what_it_does_not_know_goes_to_typer(argv: list[str]) -> None:
    assert parse_get_args(argv) is None


def test_it_knows_every_option_of_the_typer_command() -> None:
    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), "get")  # type: ignore[union-attr]
    spellings = {flag for param in command.params for flag in param.opts if flag.startswith("-")}  # type: ignore[union-attr]
    assert spellings - {"--help"} == set(_GET_OPTIONS)
    assert isinstance(parse_get_args(["--kubeconfig", "k"])["kubeconfig"], Path)  # type: ignore[index]


def test_each_resource_is_read_through_the_version_its_own_discovery_lists() -> None:
    from cluster_inventory.api.versions import read_version

    both = {"resources": [{"name": "clusterprofiles"}, {"name": "placementdecisions"}]}
    decisions_only = {"resources": [{"name": "placementdecisions"}]}
    assert read_version(both, "clusterprofiles") == "v1alpha2"
    # A group serving v1alpha2 for PlacementDecision only: ClusterProfile stays on v1alpha1.
    assert read_version(decisions_only, "clusterprofiles") == "v1alpha1"
    assert read_version(decisions_only, "placementdecisions") == "v1alpha2"
    assert read_version(None, "clusterprofiles") == "v1alpha1"  # 404: no v1alpha2 at all
    assert read_version({"resources": [{"name": "clusterprofiles/status"}]}, "clusterprofiles") == (
        "v1alpha1"
    )
    assert read_version({"resources": "garbage"}, "clusterprofiles") == "v1alpha1"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ((None, None), ("clusterprofiles", None)),
        (("alpha", None), ("clusterprofiles", "alpha")),
        (("clusterprofiles", None), ("clusterprofiles", None)),
        (("clusterprofile", "placementdecisions"), ("clusterprofiles", "placementdecisions")),
        (("placementdecisions", None), ("placementdecisions", None)),
        (("placementdecision", "p-0"), ("placementdecisions", "p-0")),
        (("placementdecisions.multicluster.x-k8s.io", "p-0"), ("placementdecisions", "p-0")),
    ],
)
def test_the_first_word_is_a_type_only_when_it_names_one(
    words: tuple[str | None, str | None], expected: tuple[str, str | None]
) -> None:
    from cluster_inventory.cli._get import resolve_resource

    assert resolve_resource(*words) == expected


def test_two_words_whose_first_is_no_type_fail_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cluster_inventory.cli._get import resolve_resource

    with pytest.raises(SystemExit) as exited:
        resolve_resource("pods", "x")
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        'error: unknown resource type "pods": get shows clusterprofiles and placementdecisions\n'
    )


@pytest.mark.parametrize(
    ("reference", "namespace", "expected"),
    [
        ("member1", None, (None, "member1")),
        ("member1", "team-a", ("team-a", "member1")),
        ("team-a/member1", None, ("team-a", "member1")),
        ("team-a/member1", "team-a", ("team-a", "member1")),
    ],
)
def test_a_profile_is_name_or_namespace_slash_name(
    reference: str, namespace: str | None, expected: tuple[str | None, str]
) -> None:
    from cluster_inventory.cli._hub import profile_reference

    assert profile_reference(reference, namespace) == expected


@pytest.mark.parametrize(
    ("reference", "namespace", "error"),
    [
        ("/member1", None, '"/member1" is no profile: give NAME or NAMESPACE/NAME'),
        ("team-a/", None, '"team-a/" is no profile: give NAME or NAMESPACE/NAME'),
        ("a/b/c", None, '"a/b/c" is no profile: give NAME or NAMESPACE/NAME'),
        ("team-a/m1", "team-b", '"team-a/m1" is in namespace "team-a", but -n says "team-b"'),
    ],
)
def test_a_bad_profile_reference_fails_in_one_line(
    reference: str, namespace: str | None, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from cluster_inventory.cli._hub import profile_reference

    with pytest.raises(SystemExit) as exited:
        profile_reference(reference, namespace)
    assert exited.value.code == 1
    assert capsys.readouterr().err == f"error: {error}\n"
