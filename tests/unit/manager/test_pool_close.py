"""``MemberPool.close`` stops its members and its loop-lag sampler even when a task failed."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.members.pool import MemberPool


async def test_a_failed_start_task_does_not_leave_the_lag_sampler_running() -> None:
    pool = MemberPool(ManagerConfig(), registry=CollectorRegistry())
    pool.start()
    sampler = pool.lag._task
    assert sampler is not None and not sampler.done()

    async def fails() -> None:
        raise RuntimeError("start failed")

    failed = asyncio.get_running_loop().create_task(fails())
    await asyncio.wait([failed])
    pool._starting[kube.ClusterConnection(server="https://127.0.0.1:1")] = failed
    with pytest.raises(RuntimeError, match="start failed"):
        await pool.close()
    assert sampler.done()  # the error used to skip the stop: the sampler ran on
    assert not pool.starting and len(pool) == 0
