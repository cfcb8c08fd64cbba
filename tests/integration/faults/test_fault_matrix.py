"""Network faults between our processes and the fleet's servers (issue 32; tests/support/network/faults.py).

For each pair (a process and the server it reaches) and each fault (Toxiproxy's latency,
bandwidth limit, reset_peer, timeout as a half-open connection, slow_close, and the proxy
disabled): the process stays up, a disruptive fault is said (and said naming the server or
member), the change made on the far side during the fault shows after the heal, and nothing
is lost or written twice. ``pytest --fault-report`` prints the matrix
(``bench/fault_campaign.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_inventory.testing import Fleet
from tests.support.hub.inventory import Inventory
from tests.support.network import faults, proxy_faults
from tests.support.network.toxiproxy import FAULTS, Toxiproxy

NAMES = list(FAULTS)


def check(cell: faults.Cell) -> None:
    faults.TALLY.cells.append(cell)
    assert cell.up, cell
    assert cell.lost == [], cell
    assert cell.written_twice == [], cell
    assert cell.recovered_s is not None, cell
    if cell.said:
        assert cell.names_server, cell  # whatever it says, it says where


@pytest.mark.parametrize("fault", NAMES)
async def test_manager_member(
    fleet: Fleet, test_namespace: str, toxiproxy: Toxiproxy, fault: str
) -> None:
    cell = await faults.manager_member(fleet, test_namespace, toxiproxy, FAULTS[fault])
    check(cell)
    if fault in ("disabled", "half-open", "reset-peer"):
        assert cell.noticed and cell.said, cell


@pytest.mark.parametrize("fault", NAMES)
async def test_manager_hub(
    fleet: Fleet, test_namespace: str, toxiproxy: Toxiproxy, fault: str
) -> None:
    check(await faults.manager_hub(fleet, test_namespace, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_runtime_member(
    inventory: Inventory, fleet_manager, toxiproxy: Toxiproxy, fault: str
) -> None:
    check(await faults.runtime_member(inventory, fleet_manager, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_apply_member(
    inventory: Inventory, tmp_path: Path, toxiproxy: Toxiproxy, fault: str
) -> None:
    cell = await faults.apply_member(inventory, tmp_path, toxiproxy, FAULTS[fault])
    check(cell)
    if fault in ("disabled", "half-open", "reset-peer"):
        assert cell.noticed and cell.said, cell


@pytest.mark.parametrize("fault", NAMES)
async def test_runtime_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: str) -> None:
    check(await faults.runtime_hub(inventory, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_plugin_hub(
    inventory: Inventory, tmp_path: Path, toxiproxy: Toxiproxy, fault: str
) -> None:
    cell = await faults.plugin_hub(inventory, tmp_path, toxiproxy, FAULTS[fault])
    check(cell)
    if fault in ("disabled", "half-open"):
        assert cell.noticed and len(cell.said) == 1, cell  # one line, naming the hub


@pytest.mark.parametrize("fault", NAMES)
async def test_dashboard_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: str) -> None:
    check(await faults.dashboard_hub(inventory, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_argocd_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: str) -> None:
    check(await faults.argocd_hub(inventory, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_multikueue_hub(inventory: Inventory, toxiproxy: Toxiproxy, fault: str) -> None:
    check(await faults.multikueue_hub(inventory, toxiproxy, FAULTS[fault]))


@pytest.mark.parametrize("fault", NAMES)
async def test_agent_proxy(
    fleet: Fleet, test_namespace: str, tmp_path: Path, toxiproxy: Toxiproxy, fault: str
) -> None:
    cell = await proxy_faults.agent_proxy(fleet, test_namespace, tmp_path, toxiproxy, FAULTS[fault])
    check(cell)
    if fault in ("disabled", "half-open", "reset-peer"):
        assert cell.noticed and cell.said, cell


@pytest.mark.parametrize("fault", NAMES)
async def test_consumer_proxy(
    fleet: Fleet, test_namespace: str, tmp_path: Path, toxiproxy: Toxiproxy, fault: str
) -> None:
    cell = await proxy_faults.consumer_proxy(
        fleet, test_namespace, tmp_path, toxiproxy, FAULTS[fault]
    )
    check(cell)
    if fault in ("disabled", "half-open", "reset-peer"):
        assert cell.noticed and cell.said, cell
