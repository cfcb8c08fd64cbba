"""The placement's pure parts: selectors, the choice, slicing, write plans, consumer grouping."""

from __future__ import annotations

import random

import pytest

from cluster_inventory.api.constants import (
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_DECISION_REVISION,
    LABEL_PLACEMENT_KEY,
)
from cluster_inventory.integrations.placement import (
    SCHEDULER_NAME,
    Candidate,
    ClusterRef,
    PlacementSpec,
    SelectorError,
    choose,
    decision_key,
    format_selector,
    from_label_selector,
    group_decisions,
    parse_selector,
    plan_writes,
    render_slices,
    slice_name,
    spec_from_object,
    to_label_selector,
)
from cluster_inventory.integrations.placement.selectors import Requirement

# -- selectors ------------------------------------------------------------------------------

SELECTOR_TABLE = [
    # (selector, labels, matches)
    ("", {}, True),
    ("env=prod", {"env": "prod"}, True),
    ("env==prod", {"env": "prod"}, True),
    ("env=prod", {"env": "dev"}, False),
    ("env=prod", {}, False),
    ("env!=prod", {}, True),  # as Kubernetes: absent keys match != and notin
    ("env!=prod", {"env": "prod"}, False),
    ("region in (eu-west-1, eu-central-1)", {"region": "eu-central-1"}, True),
    ("region in (eu-west-1, eu-central-1)", {"region": "us-east-1"}, False),
    ("region in (eu-west-1, eu-central-1)", {}, False),
    ("region notin (eu-west-1)", {}, True),
    ("region notin (eu-west-1)", {"region": "eu-west-1"}, False),
    ("gpu", {"gpu": ""}, True),
    ("gpu", {}, False),
    ("!legacy", {}, True),
    ("!legacy", {"legacy": "true"}, False),
    ("env=prod, region in (a,b), !legacy", {"env": "prod", "region": "b"}, True),
    ("env=prod, region in (a,b), !legacy", {"env": "prod", "region": "b", "legacy": "1"}, False),
    ("cluster.clusterset.k8s.io=c1", {"cluster.clusterset.k8s.io": "c1"}, True),
]


@pytest.mark.parametrize(("text", "labels", "expected"), SELECTOR_TABLE)
def test_selector_matches_as_kubernetes_does(text, labels, expected):
    requirements = parse_selector(text)
    assert all(r.matches(labels) for r in requirements) is expected
    # the structured and the text form round-trip to the same requirements
    assert sorted(from_label_selector(to_label_selector(requirements), where="x"), key=str) == (
        sorted(requirements, key=str)
    )
    assert parse_selector(format_selector(requirements)) == requirements


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env in ()", "empty"),
        ("env in (a", "never closed"),
        ("env=a)", "unbalanced"),
        ("env=prod,,x", "empty term"),
        ("env in ((a))", "nested"),
        ("a b", "not valid"),
        ("k=v=w", "not valid"),
    ],
)
def test_malformed_selector_is_refused_naming_the_term(text, message):
    with pytest.raises(SelectorError, match=message):
        parse_selector(text)


def test_structured_selector_errors_name_the_field():
    with pytest.raises(SelectorError, match=r"spec.clusterSelector.matchExpressions\[0\]"):
        from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "In"}]}, where="spec.clusterSelector"
        )
    with pytest.raises(SelectorError, match="unknown operator"):
        Requirement(key="a", operator="Near", values=("x",))  # type: ignore[arg-type]
    with pytest.raises(SelectorError, match="takes no values"):
        Requirement(key="a", operator="Exists", values=("x",))


# -- the choice -----------------------------------------------------------------------------


def cand(name, *, healthy=True, leaving=False, ns="inv", **props):
    labels = {k[2:]: v for k, v in props.items() if k.startswith("l_")}
    properties = {k: v for k, v in props.items() if not k.startswith("l_")}
    return Candidate(
        ref=ClusterRef(ns, name),
        labels=labels,
        properties=properties,
        healthy=healthy,
        leaving=leaving,
    )


FLEET = [
    cand("a1", l_env="prod", region="eu-west-1"),
    cand("a2", l_env="prod", region="eu-west-1"),
    cand("b1", l_env="prod", region="eu-central-1"),
    cand("c1", l_env="prod", region="us-east-1"),
    cand("d1", l_env="prod", region="eu-central-1", healthy=False),
    cand("e1", l_env="dev", region="eu-west-1"),
    cand("f1", l_env="prod", region="eu-west-1", leaving=True),
    cand("g1", l_env="prod"),
]
EU = parse_selector("region in (eu-west-1, eu-central-1)")
PROD = parse_selector("env=prod")

CHOICE_TABLE = [
    # (id, spec, previous, chosen, excluded)
    (
        "everything-healthy",
        PlacementSpec(),
        [],
        ["a1", "a2", "b1", "c1", "e1", "g1"],
        {"NotHealthy": ["d1"], "Leaving": ["f1"]},
    ),
    (
        "labels-and-properties",
        PlacementSpec(cluster_selector=PROD, property_selector=EU),
        [],
        ["a1", "a2", "b1"],
        {
            "LabelsDoNotMatch": ["e1"],
            "PropertiesDoNotMatch": ["c1", "g1"],
            "Leaving": ["f1"],
            "NotHealthy": ["d1"],
        },
    ),
    (
        "include-unhealthy",
        PlacementSpec(cluster_selector=PROD, property_selector=EU, include_unhealthy=True),
        [],
        ["a1", "a2", "b1", "d1"],
        {"LabelsDoNotMatch": ["e1"], "PropertiesDoNotMatch": ["c1", "g1"], "Leaving": ["f1"]},
    ),
    (
        "count-takes-first-by-name",
        PlacementSpec(property_selector=EU, number_of_clusters=2),
        [],
        ["a1", "a2"],
        {"NotChosen": ["b1", "e1"]},
    ),
    (
        "count-keeps-previous-choice",
        PlacementSpec(property_selector=EU, number_of_clusters=2),
        [ClusterRef("inv", "e1"), ClusterRef("inv", "b1")],
        ["b1", "e1"],
        {"NotChosen": ["a1", "a2"]},
    ),
    (
        "previous-choice-that-no-longer-qualifies-is-replaced",
        PlacementSpec(property_selector=EU, number_of_clusters=2),
        [ClusterRef("inv", "d1"), ClusterRef("inv", "b1")],
        ["a1", "b1"],
        {"NotChosen": ["a2", "e1"]},
    ),
    (
        "spread-over-region",
        PlacementSpec(cluster_selector=PROD, number_of_clusters=3, spread_by_property="region"),
        [],
        ["a1", "b1", "c1"],
        {"NotChosen": ["a2", "g1"]},
    ),
    (
        "spread-missing-property-last",
        PlacementSpec(cluster_selector=PROD, number_of_clusters=5, spread_by_property="region"),
        [],
        ["a1", "a2", "b1", "c1", "g1"],
        {},
    ),
    (
        "count-larger-than-fleet",
        PlacementSpec(cluster_selector=PROD, property_selector=EU, number_of_clusters=10),
        [],
        ["a1", "a2", "b1"],
        {},
    ),
    ("count-zero", PlacementSpec(number_of_clusters=0), [], [], {"NotChosen": 6}),
]


@pytest.mark.parametrize(
    ("spec", "previous", "chosen", "excluded"),
    [row[1:] for row in CHOICE_TABLE],
    ids=[row[0] for row in CHOICE_TABLE],
)
def test_choice(spec, previous, chosen, excluded):
    shuffled = FLEET[:]
    random.Random(7).shuffle(shuffled)
    result = choose(spec, shuffled, previous=previous, placement="web")
    assert [r.name for r in result.chosen] == chosen
    for reason, names in excluded.items():
        got = result.excluded.get(reason, ())
        if isinstance(names, int):
            assert len(got) == names
        else:
            assert [r.name for r in got] == names, reason
    # every profile is either chosen or excluded for exactly one reason
    accounted = list(result.chosen) + [r for refs in result.excluded.values() for r in refs]
    assert sorted(accounted) == sorted(c.ref for c in FLEET)
    # the same inputs in another order give the same choice
    assert choose(spec, FLEET, previous=previous, placement="web") == result


def test_choice_is_satisfied_only_when_the_count_is_met():
    assert choose(PlacementSpec(number_of_clusters=2), FLEET).satisfied
    assert not choose(PlacementSpec(number_of_clusters=20), FLEET).satisfied
    assert not choose(PlacementSpec(cluster_selector=parse_selector("x=y")), FLEET).satisfied


def test_candidate_reads_a_profile():
    profile = {
        "metadata": {"name": "c1", "namespace": "inv", "labels": {"env": "prod"}},
        "status": {
            "conditions": [{"type": "ControlPlaneHealthy", "status": "True"}],
            "properties": [{"name": "region", "value": "eu-west-1"}],
        },
    }
    c = Candidate.from_profile(profile)
    assert c == cand("c1", l_env="prod", region="eu-west-1")
    profile["status"]["conditions"][0]["status"] = "Unknown"
    assert not Candidate.from_profile(profile).healthy


def test_spec_from_object_names_the_placement_and_field():
    good = {
        "metadata": {"name": "web", "namespace": "inv"},
        "spec": {
            "clusterSelector": {"matchLabels": {"env": "prod"}},
            "propertySelector": {
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["eu-west-1", "eu-central-1"]}
                ]
            },
            "numberOfClusters": 2,
            "spreadByProperty": "region",
        },
    }
    spec = spec_from_object(good)
    assert spec.cluster_selector == PROD and spec.property_selector == EU
    assert spec.number_of_clusters == 2 and not spec.include_unhealthy
    bad = {"metadata": good["metadata"], "spec": {"numberOfClusters": -1}}
    with pytest.raises(SelectorError, match=r"Placement inv/web: spec.numberOfClusters"):
        spec_from_object(bad)
    bad = {"metadata": good["metadata"], "spec": {"propertySelector": {"matchProperties": []}}}
    with pytest.raises(SelectorError, match=r"spec.propertySelector.matchProperties"):
        spec_from_object(bad)


# -- slices -----------------------------------------------------------------------------------

PLACEMENT = {"metadata": {"name": "web", "namespace": "inv", "uid": "u-1"}, "spec": {}}


def many(n):
    return [cand(f"c{i:04d}") for i in range(n)]


@pytest.mark.parametrize(("clusters", "slices"), [(0, 1), (1, 1), (100, 1), (101, 2), (250, 3)])
def test_slices_hold_at_most_100_and_carry_the_labels(clusters, slices):
    choice = choose(PlacementSpec(), many(clusters), placement="web")
    out = render_slices(PLACEMENT, choice)
    assert len(out) == slices
    assert [s["metadata"]["name"] for s in out] == [f"web-{i}" for i in range(slices)]
    revisions = {s["metadata"]["labels"][LABEL_DECISION_REVISION] for s in out}
    assert len(revisions) == 1
    for index, s in enumerate(out):
        labels = s["metadata"]["labels"]
        assert labels[LABEL_DECISION_KEY] == "web"
        assert labels[LABEL_DECISION_INDEX] == str(index)
        assert labels[LABEL_PLACEMENT_KEY] == "web"
        assert s["schedulerName"] == SCHEDULER_NAME
        assert len(s["decisions"]) <= 100
        assert s["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    names = [d["clusterProfileRef"]["name"] for s in out for d in s["decisions"]]
    assert names == sorted(names) and len(names) == clusters


def test_long_names_fit_label_and_name_limits():
    long = "p" * 250
    assert len(decision_key(long)) <= 63
    assert decision_key(long) != decision_key(long[:-1] + "q")
    assert len(slice_name(long, 12)) <= 253 and slice_name(long, 12).endswith("-12")


def stored(slices, rv=1, **changes):
    out = []
    for s in slices:
        copy = {**s, "metadata": {**s["metadata"], "uid": "s-" + s["metadata"]["name"]}}
        copy["metadata"]["resourceVersion"] = str(rv)
        copy.update(changes)
        out.append(copy)
    return out


def test_unchanged_choice_plans_no_write():
    choice = choose(PlacementSpec(), many(250))
    wanted = render_slices(PLACEMENT, choice)
    plan = plan_writes(wanted, stored(wanted), placement_uid="u-1")
    assert plan.empty and not plan.conflicts


def test_a_dropped_cluster_rewrites_and_surplus_slices_are_deleted():
    before = render_slices(PLACEMENT, choose(PlacementSpec(), many(250)))
    after = render_slices(PLACEMENT, choose(PlacementSpec(), many(150)))
    plan = plan_writes(after, stored(before), placement_uid="u-1")
    assert [s["metadata"]["name"] for s in plan.apply] == ["web-0", "web-1"]  # new revision
    assert plan.delete == (("web-2", "s-web-2"),)


def test_another_schedulers_decisions_are_never_planned():
    wanted = render_slices(PLACEMENT, choose(PlacementSpec(), many(3)))
    foreign_same_name = stored(wanted, schedulerName="ocm")
    plan = plan_writes(wanted, foreign_same_name, placement_uid="u-1")
    assert plan.conflicts == ("web-0",) and not plan.apply and not plan.delete
    foreign_surplus = stored(
        render_slices(PLACEMENT, choose(PlacementSpec(), many(300))), schedulerName="ocm"
    )
    plan = plan_writes(wanted, foreign_surplus, placement_uid="u-1")
    assert not plan.delete


# -- consumer grouping -------------------------------------------------------------------------


def test_consumer_reads_all_slices_of_a_key_as_one_set():
    out = stored(render_slices(PLACEMENT, choose(PlacementSpec(), many(250))))
    random.Random(1).shuffle(out)
    other = stored(
        render_slices(
            {**PLACEMENT, "metadata": {**PLACEMENT["metadata"], "name": "db"}},
            choose(PlacementSpec(), many(5)),
        )
    )
    got = group_decisions([*out, *other], "web")
    assert got.complete and got.found
    assert got.slices == ("web-0", "web-1", "web-2")
    assert got.clusters == tuple(f"inv/c{i:04d}" for i in range(250))
    assert got.scheduler_names == (SCHEDULER_NAME,)


def test_consumer_keeps_the_complete_revision_while_slices_are_rewritten():
    old = stored(render_slices(PLACEMENT, choose(PlacementSpec(), many(250))), rv=5)
    new = stored(render_slices(PLACEMENT, choose(PlacementSpec(), many(240))), rv=9)
    mixed = [new[0], old[1], old[2]]  # slice 0 rewritten, 1 and 2 not yet
    got = group_decisions(mixed, "web")
    assert not got.complete and got.slices == ("web-0",)
    both = [*old, new[0]]  # a stale copy of the old revision still complete
    got = group_decisions(both, "web")
    assert got.complete and len(got.clusters) == 250


def test_consumer_reads_slices_without_revision_or_namespace_in_refs():
    foreign = {
        "metadata": {"name": "x", "namespace": "inv", "labels": {LABEL_DECISION_KEY: "k"}},
        "decisions": [{"clusterProfileRef": {"name": "c1"}}],
    }
    got = group_decisions([foreign], "k")
    assert got.clusters == ("inv/c1",) and got.revision is None
    assert not got.complete  # no decision-index label
    foreign["metadata"]["labels"][LABEL_DECISION_INDEX] = "0"
    assert group_decisions([foreign], "k").complete
    assert not group_decisions([foreign], "other").found
