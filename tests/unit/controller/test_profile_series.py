"""The profile condition series: kube-state-metrics' shape, built per scrape."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import ProfileConditionCollector, ProfileSeries


def profile(name: str, status: str, reason: str = "") -> ProfileView:
    return ProfileView.of(
        {
            "metadata": {"namespace": "team-a", "name": name},
            "status": {
                "conditions": [
                    {
                        "type": "ControlPlaneHealthy",
                        "status": status,
                        "reason": reason,
                        "lastTransitionTime": "2026-11-30T10:00:00Z",
                    },
                    {"type": "Joined", "status": "True", "reason": "Joined"},
                ]
            },
        }
    )


def test_three_series_per_condition_one_of_them_1_and_the_reason() -> None:
    profiles = [profile("member1", "True", "Healthy"), profile("member2", "False", "ReadyzFailed")]
    registry = CollectorRegistry()
    registry.register(ProfileConditionCollector(lambda: profiles))

    def value(sample: str, **labels: str) -> float | None:
        return registry.get_sample_value(sample, {"namespace": "team-a", **labels})

    metric = "cluster_inventory_cluster_profile_condition"
    h = {"condition": "ControlPlaneHealthy"}
    assert value(metric, name="member2", status="false", **h) == 1
    assert value(metric, name="member2", status="true", **h) == 0
    assert value(metric, name="member2", status="unknown", **h) == 0
    assert value(metric, name="member1", status="true", **h) == 1
    assert value(f"{metric}_reason", name="member2", reason="ReadyzFailed", **h) == 1
    assert value(f"{metric}_last_transition_time_seconds", name="member2", **h) == 1796032800
    # A profile that goes leaves no series behind: they are built at each scrape.
    profiles.pop()
    assert value(metric, name="member2", status="false", **h) is None
    # Per condition three statuses, a reason and a transition time (Joined has none); an info.
    assert generate_latest(registry).count(b'name="member1"') == 3 + 1 + 1 + 3 + 1 + 1


def test_a_malformed_status_counts_as_unknown_and_conditions_can_be_chosen() -> None:
    registry = CollectorRegistry()
    views = [profile("m", "Maybe")]
    registry.register(ProfileConditionCollector(lambda: views, ["ControlPlaneHealthy"]))
    labels = {"namespace": "team-a", "name": "m", "condition": "ControlPlaneHealthy"}
    metric = "cluster_inventory_cluster_profile_condition"
    assert registry.get_sample_value(metric, {**labels, "status": "unknown"}) == 1
    assert (
        registry.get_sample_value(metric, {**labels, "condition": "Joined", "status": "true"})
        is None
    )


def test_the_info_series_names_member_id_version_manager_and_access_mode() -> None:
    probed = ProfileView.of(
        {
            "metadata": {
                "namespace": "team-a",
                "name": "member1",
                "labels": {"multicluster.x-k8s.io/inventory-member-id": "uid-1"},
            },
            "spec": {"clusterManager": {"name": "cluster-inventory"}},
            "status": {
                "version": {"kubernetes": "v1.34.1"},
                "conditions": [{"type": "Joined", "status": "True", "reason": "Joined"}],
            },
        }
    )
    agent = ProfileView.of(
        {
            "metadata": {"namespace": "team-a", "name": "member2"},
            "status": {
                "conditions": [
                    {"type": "Joined", "status": "True", "reason": "AgentReporting"},
                ]
            },
        }
    )
    registry = CollectorRegistry()
    registry.register(ProfileConditionCollector(lambda: [probed, agent]))
    info = "cluster_inventory_cluster_profile_info"
    assert (
        registry.get_sample_value(
            info,
            {
                "namespace": "team-a",
                "name": "member1",
                "member_id": "uid-1",
                "version": "v1.34.1",
                "manager": "cluster-inventory",
                "access_mode": "probe",
            },
        )
        == 1
    )
    pulled = {"namespace": "team-a", "name": "member2", "member_id": "", "version": ""}
    assert registry.get_sample_value(info, {**pulled, "manager": "", "access_mode": "pull"}) == 1


def test_one_registry_exports_each_family_once_over_every_view_added() -> None:
    registry = CollectorRegistry()
    series = ProfileSeries.for_registry(registry)
    assert ProfileSeries.for_registry(registry) is series
    first = series.add(lambda: [profile("member1", "True")])
    series.add(lambda: [profile("member2", "False")])
    text = generate_latest(registry).decode()
    assert text.count("# TYPE cluster_inventory_cluster_profile_condition gauge") == 1
    assert 'name="member1"' in text and 'name="member2"' in text
    first()
    first()  # twice is harmless
    text = generate_latest(registry).decode()
    assert 'name="member1"' not in text and 'name="member2"' in text
