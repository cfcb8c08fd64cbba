"""ManagerConfig: the Secret-scoped mode needs the inventories its Secrets are granted in."""

from __future__ import annotations

import pytest

from cluster_inventory.manager import ManagerConfig


def test_inventory_namespaces_only_needs_an_inventory() -> None:
    with pytest.raises(ValueError, match="inventory_namespaces_only"):
        ManagerConfig(inventory_namespaces_only=True)


def test_inventory_namespaces_only_with_inventories() -> None:
    config = ManagerConfig(
        inventory_namespaces={"team-a": ("prod",)}, inventory_namespaces_only=True
    )
    assert config.inventory_namespaces_only
    assert not ManagerConfig().inventory_namespaces_only
