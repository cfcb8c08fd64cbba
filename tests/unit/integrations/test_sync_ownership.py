"""Which objects a sync instance may write: its own and, once, those from before instances."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.api.constants import LABEL_SYNC_INSTANCE
from cluster_inventory.integrations.sync._ownership import (
    LABEL_MANAGED_BY,
    instance_lease_name,
    owner_of,
    validate_instance,
)
from cluster_inventory.integrations.sync.multikueue import (
    FIELD_MANAGER,
    MultiKueueSync,
    render_multikueue_config,
)


def obj(**labels: str) -> dict:
    return {"metadata": {"name": "x", "labels": labels}}


def test_owner_is_read_from_the_labels() -> None:
    assert (
        owner_of(obj(**{LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_SYNC_INSTANCE: "a"}), FIELD_MANAGER)
        == "a"
    )
    assert owner_of(obj(**{LABEL_MANAGED_BY: FIELD_MANAGER}), FIELD_MANAGER) == "default"
    assert owner_of(obj(**{LABEL_MANAGED_BY: "someone-else"}), FIELD_MANAGER) is None
    assert owner_of({"metadata": {}}, FIELD_MANAGER) is None


async def test_an_instance_owns_its_objects_and_adopts_only_unlabelled_ones_of_its_sync() -> None:
    sync = MultiKueueSync(
        None, kueue_namespace="kueue-system", registry=CollectorRegistry(), instance="a"
    )  # type: ignore[arg-type]
    assert sync.ownership_labels() == {LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_SYNC_INSTANCE: "a"}
    assert (
        sync.ownership_selector() == f"{LABEL_MANAGED_BY}={FIELD_MANAGER},{LABEL_SYNC_INSTANCE}=a"
    )
    assert sync.owns(obj(**{LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_SYNC_INSTANCE: "a"}))
    assert sync.owns(obj(**{LABEL_MANAGED_BY: FIELD_MANAGER}))  # written before instances
    assert not sync.owns(obj(**{LABEL_MANAGED_BY: FIELD_MANAGER, LABEL_SYNC_INSTANCE: "b"}))
    assert not sync.owns(obj(**{LABEL_SYNC_INSTANCE: "a"}))
    assert not sync.owns(obj())


def test_the_config_carries_the_instance() -> None:
    body = render_multikueue_config("fleet", ["c1"], instance="fleet")
    assert body["metadata"]["labels"][LABEL_SYNC_INSTANCE] == "fleet"
    other = render_multikueue_config("fleet", ["c1"], instance="other")
    assert other["metadata"]["annotations"] != body["metadata"]["annotations"]


def test_each_instance_has_its_own_lease_and_the_default_keeps_the_old_name() -> None:
    assert (
        instance_lease_name("cluster-inventory-multikueue", "default")
        == "cluster-inventory-multikueue"
    )
    assert (
        instance_lease_name("cluster-inventory-multikueue", "fleet-a")
        == "cluster-inventory-multikueue-fleet-a"
    )


@pytest.mark.parametrize("bad", ["", "A", "-a", "a-", "a_b", "x" * 64, "a/b", "ä"])
def test_bad_instance_names_are_refused_with_the_rule(bad: str) -> None:
    with pytest.raises(ValueError, match="at most 63 characters"):
        validate_instance(bad)
    assert validate_instance("fleet.a-1") == "fleet.a-1"


async def test_a_sync_with_a_config_is_the_instance_the_command_with_that_config_is() -> None:
    """The demo builds the class; `multikueue sync --config-name team-a` on its kept fleet
    must be the same instance, or it finds every name taken and writes nothing."""
    from typer.testing import CliRunner

    from cluster_inventory.cli import app
    from cluster_inventory.integrations.sync.multikueue import default_instance

    built = MultiKueueSync(
        None, kueue_namespace="team-a", config_name="team-a", registry=CollectorRegistry()
    )  # type: ignore[arg-type]
    assert built.instance == default_instance("team-a") == "team-a"
    plain = MultiKueueSync(None, kueue_namespace="team-a", registry=CollectorRegistry())  # type: ignore[arg-type]
    assert plain.instance == default_instance(None) == "default"
    named = MultiKueueSync(
        None, kueue_namespace="a", config_name="c", instance="x", registry=CollectorRegistry()
    )  # type: ignore[arg-type]
    assert named.instance == "x"
    help_text = CliRunner().invoke(app, ["multikueue", "sync", "--help"]).output
    assert "defaults to --config-name" in " ".join(help_text.split())
