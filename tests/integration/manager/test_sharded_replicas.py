"""Cluster manager replicas sharing members: a replica SIGKILLed, one added, none lost.

Three ``cluster-inventory manager run --sharding`` processes on the session fleet; every
registration has its own inventory (so registrations reaching one real member are not
duplicates of each other). Checked against the hub, from a watch started before the
replicas: each profile is held (annotation) and written by the replica rendezvous hashing
gives it; a killed replica's members are taken by the others and show a change made on the
member after the kill, with no write refused by the fence (nothing contends for them: a
refusal there is a replica mistaking its own writes for someone else's); a replica added
takes only its own share; no profile is ever deleted; a replica stopped with SIGTERM
removes its Lease.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
)
from cluster_inventory.controller.sharding import LABEL_SHARD_GROUP, rendezvous_owner
from cluster_inventory.kube.informer import Informer
from cluster_inventory.testing import free_port
from tests.support.hub.sharded_replicas import own_inventories, replica, scraped, stopped
from tests.support.waiting import eventually

MEMBERS = [f"r{i}" for i in range(9)]
STAMP = "stamp.shard-test.cluster-inventory.dev"
FENCED = "cluster_inventory_shard_fenced_writes"


def _stamp(profile: dict[str, Any]) -> str | None:
    for prop in (profile.get("status") or {}).get("properties") or ():
        if prop.get("name") == STAMP:
            return str(prop.get("value"))
    return None


def _holder(profile: dict[str, Any]) -> str | None:
    return (profile["metadata"].get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER)


async def test_replicas_share_members_and_take_over_a_killed_one(fleet, test_namespace):
    manager = "sh-" + test_namespace[-8:]
    kc = str(fleet.hub.kubeconfig_path)
    members = list(fleet.members.values())
    async with await fleet.hub.client() as hub:
        inventories = await own_inventories(hub, fleet, test_namespace, manager, MEMBERS)
        deleted: list[str] = []
        profiles = Informer(
            hub,
            kube.CLUSTER_PROFILES,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={manager}",
            name="test profiles",
        )
        profiles.add_handler(
            lambda event, obj, _: (
                deleted.append(obj["metadata"]["name"]) if event == "DELETED" else None
            )
        )
        ports = {n: free_port() for n in ("ra", "rb", "rc")}
        replicas = {
            n: replica(n, manager, test_namespace, kc, metrics=f"127.0.0.1:{port}")
            for n, port in ports.items()
        }
        try:
            async with profiles:
                await profiles.wait_synced()

                def held_by(live: list[str], *, stamp: str | None = None) -> bool:
                    items = {p["metadata"]["name"]: p for p in profiles.items()}
                    return len(items) == len(MEMBERS) and all(
                        _holder(items[m]) == rendezvous_owner(m, live)
                        and (items[m].get("status") or {}).get("accessProviders")
                        and (stamp is None or _stamp(items[m]) == stamp)
                        for m in MEMBERS
                    )

                live = ["ra", "rb", "rc"]
                await eventually(
                    lambda: held_by(live), timeout=60, what="every profile held by its owner"
                )
                owned = {r: [m for m in MEMBERS if rendezvous_owner(m, live) == r] for r in live}
                assert all(owned.values()), owned  # the names give every replica a share
                victim = max(owned, key=lambda r: len(owned[r]))

                # What a new holder must keep of the status it takes over: every condition's
                # transition time (read from its cache, where another's profile is trimmed).
                def transitions() -> dict[str, dict[str, tuple[str, str]]]:
                    return {
                        p["metadata"]["name"]: {
                            c["type"]: (c["status"], c["lastTransitionTime"])
                            for c in p["status"]["conditions"]
                        }
                        for p in profiles.items()
                    }

                before_kill = transitions()
                survivors = [r for r in live if r != victim]
                fenced = {r: await scraped(ports[r], FENCED) for r in survivors}
                replicas[victim].send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                live.remove(victim)
                # A change made on every member after the kill must reach every profile,
                # the killed replica's ones through their new holders.
                stamp = f"after-{victim}"
                async with asyncio.TaskGroup() as group:
                    for member in members:
                        client = await member.client()
                        group.create_task(_set_stamp(client, stamp))
                await eventually(
                    lambda: held_by(live, stamp=stamp),
                    timeout=30,
                    what=f"{victim}'s members taken over and fresh",
                )
                takeover = time.monotonic() - killed_at
                assert takeover < 20, takeover
                # A claim is two writes (labels, then status): the echo of the first must not
                # make the next write conditional on a version the second superseded.
                refused = {r: await scraped(ports[r], FENCED) - fenced[r] for r in survivors}
                assert refused == dict.fromkeys(survivors, 0), refused
                after_kill = transitions()
                for m in owned[victim]:
                    assert after_kill[m] == before_kill[m], (m, before_kill[m], after_kill[m])

                # One replica more: it takes its own share only.
                replicas["rd"] = replica("rd", manager, test_namespace, kc)
                before = {m: rendezvous_owner(m, live) for m in MEMBERS}
                live.append("rd")
                await eventually(lambda: held_by(live), timeout=60, what="rd took its share")
                moved = [m for m in MEMBERS if rendezvous_owner(m, live) != before[m]]
                assert all(rendezvous_owner(m, live) == "rd" for m in moved)
                assert deleted == []
        finally:
            outputs = await stopped(replicas)
        for name, proc in replicas.items():
            if name != victim:
                assert proc.returncode == 0, outputs[name][1][-2000:]
            assert "Traceback" not in outputs[name][1], outputs[name][1][-3000:]
        leases = await kube.list_objects(
            hub,
            kube.LEASES,
            namespace=test_namespace,
            label_selector=f"{LABEL_SHARD_GROUP}={manager}",
        )
        # Stopped replicas removed their Leases; only the killed one's is left behind.
        holders = [i["spec"]["holderIdentity"] for i in leases["items"]]
        assert holders == [victim], holders
        for member in members:
            async with await member.client() as client:
                await kube.delete(client, kube.CLUSTER_PROPERTIES, STAMP)
        for ns in inventories.values():
            await kube.delete(hub, kube.NAMESPACES, ns)


async def _set_stamp(client: kube.ApiClient, value: str) -> None:
    async with client:
        await kube.apply(
            client,
            kube.CLUSTER_PROPERTIES,
            {"metadata": {"name": STAMP}, "spec": {"value": value}},
            field_manager="test",
        )
