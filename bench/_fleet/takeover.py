"""R > 1 only: a replica SIGKILLed and its members taken over, then one more replica joins.

What must hold is rendezvous hashing's (``controller.sharding.rendezvous_owner``): after the
kill each of the victim's profiles moves once, to its owner among the survivors, and no
other moves; after the join exactly the profiles rendezvous gives the newcomer move to it.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from dataclasses import dataclass

from cluster_inventory import kube
from cluster_inventory.controller.sharding import rendezvous_owner

from .live import LiveRun
from .phases import write_sample
from .profiles import full, holder, props, quantiles, wait
from .record import Join, Kill
from .replicas import replica_name
from .scrapes import hub_requests, proxy_stats


@dataclass(frozen=True, kw_only=True)
class Handover:
    """The holders just before the kill (profile -> replica), and the survivors by name."""

    held: dict[str, str]
    live: list[str]


def _member_index(name: str) -> int:
    """The virtual member's index in its name (``VirtualMembers.name``)."""
    return int(name.rsplit("-", 1)[1])


async def kill(live: LiveRun) -> tuple[Kill, Handover]:
    """SIGKILL the replica holding most profiles; at once change a property on each of its
    members; seconds until all of them show it, held by a live replica.

    ``live.victim`` and ``live.killed`` are set at the kill.

    Raises:
        RuntimeError: before the kill a profile was not held by its rendezvous owner, or
            the victim's members were not fresh within max(60 s, timeout / 2).
    """
    hub_before = await hub_requests(live.hub, writes_only=False)
    members_before = await asyncio.to_thread(proxy_stats, live.vm)
    held, victim = _victim(live)
    theirs = sorted(m for m, h in held.items() if h == victim)
    survivors = sorted(live.replicas)
    live.replicas[victim].proc.send_signal(signal.SIGKILL)
    killed = time.perf_counter()
    live.victim, live.killed = victim, killed
    survivors.remove(victim)
    fence_rv = await _fence(live, killed)
    stamp = f"stamp-{live.names.run}"
    fresh = live.watch.waiter(
        set(theirs),
        lambda name, o: (
            props(o).get(f"{stamp}.{name}") == "after-kill" and holder(o) not in ("", victim)
        ),
    )
    await write_sample(live, [_member_index(m) for m in theirs], stamp, "after-kill")
    writes_done = time.perf_counter() - killed
    fresh_s = await wait(fresh, max(60.0, live.s.timeout / 2), "killed replica's members") - killed
    claimed = _claimed(live, theirs)
    # What the takeover cost, per member taken over: hub requests by verb and resource (the
    # benchmark's own property writes go to the members), member requests through the proxy.
    spent = await hub_requests(live.hub, writes_only=False) - hub_before
    members_after = await asyncio.to_thread(proxy_stats, live.vm)
    await asyncio.sleep(min(3.0, live.s.lease_duration))  # anything late would show now
    handover = Handover(held=held, live=survivors)
    record = Kill(
        victim=victim,
        members=len(theirs),
        writes_done_s=writes_done,
        fresh_s=fresh_s,
        claimed_quantiles=quantiles(claimed),
        fresh_quantiles=quantiles([t - killed for t in fresh.times]),
        hub_requests_per_member={k: round(v / len(theirs), 2) for k, v in spent.most_common(8)},
        member_requests_per_member=round(
            (members_after["requests"] - members_before["requests"]) / len(theirs), 2
        ),
        bad_holders=_bad_holders_after_kill(live, handover),
        victim_writes=sum(
            1
            for t, _, who, rv in live.watch.status_changes
            if t > killed and who == victim and rv > fence_rv
        ),
        lost=live.watch.deleted + (live.n - len(live.watch.informer.keys())),
    )
    return record, handover


def _victim(live: LiveRun) -> tuple[dict[str, str], str]:
    """The holders now (profile -> replica) and the replica holding most profiles.

    Raises:
        RuntimeError: a profile is not held by its rendezvous owner among the replicas.
    """
    held = {name: holder(p) for name, p in live.watch.by_name().items()}
    replicas = sorted(live.replicas)
    astray = [m for m in held if held[m] != rendezvous_owner(m, replicas)]
    if astray:
        raise RuntimeError(f"before the kill {len(astray)} profiles are not held by their owner")
    counts = Counter(held.values())
    return held, max(counts, key=lambda x: counts[x])


def _claimed(live: LiveRun, theirs: list[str]) -> list[float]:
    """How the takeover spreads: seconds from the kill until each of the victim's members
    was first claimed by another replica (its holder annotation); unclaimed ones left out."""
    claimed = sorted(
        min(
            (
                t
                for t, who in live.watch.holders.get(m, ())
                if t > live.killed and who != live.victim
            ),
            default=0,
        )
        for m in theirs
    )
    return [t - live.killed for t in claimed if t]


async def _fence(live: LiveRun, killed: float) -> int:
    """A hub write right after the kill; its resourceVersion (etcd's revision, shared by
    every object of this fleet) orders any later write against the kill."""
    marker = await kube.apply(
        live.hub,
        kube.CONFIG_MAPS,
        {
            "metadata": {"name": "kill-marker", "namespace": live.names.system},
            "data": {"t": str(killed)},
        },
        field_manager="bench",
    )
    return int(marker["metadata"]["resourceVersion"])


def _bad_holders_after_kill(live: LiveRun, handover: Handover) -> int:
    """Profiles whose holders since the kill did anything but stay, or move once from the
    victim to its rendezvous owner among the survivors."""
    held = handover.held
    return sum(
        1
        for m, seq in live.watch.holders_after(live.killed).items()
        if not (
            seq == [held[m]]
            or (held[m] == live.victim and seq == [live.victim, rendezvous_owner(m, handover.live)])
        )
    )


async def join(live: LiveRun, handover: Handover) -> Join:
    """One more replica: seconds until every profile has the holder rendezvous now gives it
    (and full status); holders that changed, against the prediction and N / replicas.

    Raises:
        RuntimeError: not settled within ``Settings.timeout``.
    """
    held = handover.held
    newcomer = replica_name(live.names.run, len(live.replicas))
    before = {m: rendezvous_owner(m, handover.live) for m in held}
    after = {m: rendezvous_owner(m, [*handover.live, newcomer]) for m in held}
    settled = live.watch.waiter(set(held), lambda m, o: holder(o) == after[m] and full(o))
    joined = time.perf_counter()
    live.spawn(newcomer)
    settled_s = await wait(settled, live.s.timeout, "join: profiles with their new holder") - joined
    seqs = live.watch.holders_after(joined)
    return Join(
        newcomer=newcomer,
        expected_moves=sum(1 for m in held if before[m] != after[m]),
        naive_moves=live.n / (len(handover.live) + 1),
        live_after=len(handover.live) + 1,
        settled_s=settled_s,
        moved=sum(1 for seq in seqs.values() if len(seq) > 1),
        bad_holders=sum(
            1
            for m, seq in seqs.items()
            if not (
                (seq == [before[m]] and after[m] == before[m])
                or (seq == [before[m], newcomer] and after[m] == newcomer)
            )
        ),
    )
