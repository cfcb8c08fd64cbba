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


def test_a_member_connection_is_kept_idle_only_if_the_next_probe_can_use_it() -> None:
    # aiohttp's 15 s keep-alive while probes come sooner; past that, the connection a probe
    # opened would idle unused until aiohttp closed it, holding memory for every member.
    assert ManagerConfig(probe_interval=2.0).member_keepalive == 15.0
    assert ManagerConfig(probe_interval=30.0).member_keepalive == 2.0
