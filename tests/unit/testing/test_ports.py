"""Loopback ports are reserved with lock files that expire."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from cluster_inventory.testing import _process


def test_free_port_reserves_and_prunes_stale_locks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_process, "_pruned", False)
    locks = tmp_path / "ports"
    locks.mkdir()
    stale, fresh = locks / "port-1", locks / "port-2"
    stale.touch()
    fresh.touch()
    old = time.time() - 600
    os.utime(stale, (old, old))
    first, second = _process.free_port(), _process.free_port()
    assert first != second
    assert {p.name for p in locks.iterdir()} == {"port-2", f"port-{first}", f"port-{second}"}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", first))  # free to bind: only reserved among our processes
