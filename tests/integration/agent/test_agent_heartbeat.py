"""The agent's heartbeat renews the Lease accept created, and never creates one."""

from __future__ import annotations

import pytest

from cluster_inventory import kube
from cluster_inventory.agent import Heartbeat, MemberNotAcceptedError
from cluster_inventory.api.constants import AGENT_USER_PREFIX
from tests.support.hub.agents import Accepted, running
from tests.support.waiting import eventually


async def test_heartbeat_renews_the_lease_with_the_configured_duration(
    accepted: Accepted,
) -> None:
    heartbeat = Heartbeat(
        accepted.hub, name=accepted.name, namespace=accepted.namespace, duration=1
    )
    times = []
    async with running(heartbeat.run()):
        for count in (1, 2, 3):
            await eventually(lambda n=count: heartbeat.renewals >= n, what=f"renewal {count}")
            times.append((await accepted.lease())["spec"]["renewTime"])
    assert times == sorted(times) and len(set(times)) == 3, times
    spec = (await accepted.lease())["spec"]
    assert spec["holderIdentity"] == AGENT_USER_PREFIX + accepted.name
    assert spec["leaseDurationSeconds"] == 1


async def test_a_missing_lease_says_the_member_is_not_accepted(accepted: Accepted) -> None:
    await kube.delete(accepted.admin, kube.LEASES, accepted.name, accepted.namespace)
    heartbeat = Heartbeat(accepted.hub, name=accepted.name, namespace=accepted.namespace)
    with pytest.raises(MemberNotAcceptedError, match=f"member {accepted.name} is not accepted"):
        await heartbeat.renew()
    # Even an identity that may create Leases (the hub's admin) does not create one.
    admin = Heartbeat(accepted.admin, name=accepted.name, namespace=accepted.namespace)
    with pytest.raises(MemberNotAcceptedError, match="404"):
        await admin.renew()
    with pytest.raises(kube.NotFoundError):
        await accepted.lease()


async def test_another_members_lease_is_not_the_agents_to_renew(accepted: Accepted) -> None:
    other = "member-not-accepted"
    body = {"metadata": {"name": other, "namespace": accepted.namespace}, "spec": {}}
    await kube.apply(accepted.admin, kube.LEASES, body, field_manager="t")
    before = (await kube.get(accepted.admin, kube.LEASES, other, accepted.namespace))["spec"]
    heartbeat = Heartbeat(accepted.hub, name=other, namespace=accepted.namespace)
    with pytest.raises(MemberNotAcceptedError, match="403"):
        await heartbeat.renew()
    after = (await kube.get(accepted.admin, kube.LEASES, other, accepted.namespace))["spec"]
    assert after == before
