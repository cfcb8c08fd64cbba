"""Incremental placement equals the full one, on random sequences of events (issue 31)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_inventory.kube import ClusterConnection
from cluster_inventory.manager import ProfileKey, Registration
from cluster_inventory.manager.rules.inventory import Inventory, members_and_duplicates, plan
from cluster_inventory.manager.rules.inventory_state import InventoryState
from cluster_inventory.manager.rules.member_keys import member_key

NAMES = [f"r{i}" for i in range(5)]
SETS = ["a", "b", "c"]
SERVERS = [f"https://m{i}" for i in range(3)]
NAMESPACES = ["n0", "n1"]
IDS = ["u1", "u2"]


def conn(server: str) -> ClusterConnection:
    return member_key(ClusterConnection(server=server))


@dataclass
class World:
    """What the hub, the source, the shard and the members say now."""

    regs: dict[str, Registration] = field(default_factory=dict)
    invs: dict[str, Inventory] = field(default_factory=dict)
    held: frozenset[str] | None = frozenset()
    owned: set[str] = field(default_factory=lambda: set(NAMES))
    conn_ids: dict[ClusterConnection, str] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)
    pending: set[ClusterConnection] = field(default_factory=set)
    existing: set[ProfileKey] = field(default_factory=set)
    started: set[ClusterConnection] = field(default_factory=set)

    def owns(self, name: str) -> bool:
        return name in self.owned

    def member_id(self, name: str) -> str | None:
        if name not in self.owned:
            return self.elsewhere.get(name)
        c = member_key(self.regs[name].connection)
        return self.conn_ids.get(c) if c in self.started else None

    def is_pending(self, name: str) -> bool:
        reg = self.regs.get(name)
        if name not in self.owned or reg is None:
            return False
        c = member_key(reg.connection)
        return c in self.started and c in self.pending

    def mine(self, name: str) -> list[ProfileKey]:
        return [k for k in self.existing if k.name == name and self.owns(name)]


def full(world: World) -> dict:
    """What the full placement (the pure functions over everything) decides."""
    regs, invs, held = world.regs, world.invs, world.held
    owned = {n for n in regs if world.owns(n)}
    ids = {n: mid for n in regs if (mid := world.member_id(n))}
    everyone, dups = members_and_duplicates(regs, invs, ids)
    desired = {k: e for k, e in everyone.items() if k.name in owned}
    todo = plan(desired, {k for k in world.existing if world.owns(k.name)}, invs)
    pending = {n for n in owned if world.is_pending(n)}
    by_member: dict[ClusterConnection, set[ProfileKey]] = {}
    for key in desired:
        by_member.setdefault(member_key(regs[key.name].connection), set()).add(key)
    sets = [inv.clustersets for inv in invs.values()]
    return {
        "desired": desired,
        "duplicates": sorted(d for d in dups if d.registration in owned),
        "held": sorted(k for k in todo.delete if held is None or k.name in held),
        "create": [k for k in todo.create if k.name not in pending],
        "delete": [k for k in todo.delete if held is not None and k.name not in held | pending],
        "by_member": by_member,
        "needed": {
            member_key(regs[n].connection)
            for n in owned
            if any(s.intersection(regs[n].clustersets) for s in sets)
        },
    }


def run_pass(state: InventoryState, world: World, names: set[str]) -> None:
    """What the controller does around :meth:`InventoryState.place`, the hub writes done."""
    while names:
        world.started |= {member_key(r.connection) for r in state.candidates(names).values()}
        step = state.place(
            names,
            member_id=world.member_id,
            pending=world.is_pending,
            existing=world.mine,
            started=world.started,
        )
        assert not set(step.create) & world.existing
        world.existing |= set(step.create)
        world.existing -= set(step.delete)
        names = set()
        for c in step.stop:
            world.started.discard(c)
            if c in world.pending:  # its profiles waited for it: placed once more
                names |= state.names_of(c)


registration = st.builds(
    lambda name, sets, server: Registration(
        name=name,
        clustersets=tuple(sets),
        connection=ClusterConnection(server=server),
        display_name=name,
        source=f"Secret ns/{name}",
    ),
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(SETS), min_size=1, max_size=2, unique=True),
    st.sampled_from(SERVERS),
)
inventory = st.builds(
    lambda ns, sets, terminating: Inventory(
        namespace=ns, clustersets=frozenset(sets), member_role="view", terminating=terminating
    ),
    st.sampled_from(NAMESPACES),
    st.lists(st.sampled_from(SETS), min_size=1, max_size=2, unique=True),
    st.booleans(),
)
name = st.sampled_from(NAMES)
server = st.sampled_from(SERVERS)
events = st.one_of(
    st.tuples(st.just("register"), registration),
    st.tuples(st.just("deregister"), name),
    st.tuples(st.just("held"), st.none() | st.frozensets(name, max_size=2)),
    st.tuples(st.just("inventory"), inventory),
    st.tuples(st.just("drop-inventory"), st.sampled_from(NAMESPACES)),
    st.tuples(st.just("shard"), st.frozensets(name)),
    st.tuples(st.just("member-id"), server, st.none() | st.sampled_from(IDS)),
    st.tuples(st.just("observed"), server, st.booleans()),
    st.tuples(st.just("elsewhere"), name, st.none() | st.sampled_from(IDS)),
    st.tuples(st.just("stray"), st.sampled_from(NAMESPACES), name),
    st.tuples(st.just("profile-deleted"), st.sampled_from(NAMESPACES), name),
)


def apply(state: InventoryState, world: World, event: tuple) -> set[str]:
    """Change the world as ``event`` says; the names the controller would place again."""
    kind, *args = event
    if kind == "register":
        world.regs[args[0].name] = args[0]
        return state.set_registrations(dict(world.regs), world.held)
    if kind == "deregister":
        world.regs.pop(args[0], None)
        return state.set_registrations(dict(world.regs), world.held)
    if kind == "held":
        world.held = args[0]
        return state.set_registrations(dict(world.regs), world.held)
    if kind in ("inventory", "drop-inventory", "shard"):
        if kind == "inventory":
            world.invs[args[0].namespace] = args[0]
        elif kind == "drop-inventory":
            world.invs.pop(args[0], None)
        else:
            world.owned = set(args[0])
        names = state.reset(dict(world.regs), dict(world.invs), world.held, world.owns)
        return names | {k.name for k in world.existing}
    if kind in ("member-id", "observed"):
        c = conn(args[0])
        if kind == "member-id":
            if args[1] is None:
                world.conn_ids.pop(c, None)
            else:
                world.conn_ids[c] = args[1]
        elif args[1]:
            world.pending.discard(c)
        else:
            world.pending.add(c)
        return state.names_of(c)
    if kind == "elsewhere":
        if args[1] is None:
            world.elsewhere.pop(args[0], None)
        else:
            world.elsewhere[args[0]] = args[1]
        return {args[0]}
    key = ProfileKey(args[0], args[1])
    present = kind == "stray"
    if present == (key in world.existing):
        return set()
    if present:
        world.existing.add(key)
    else:
        world.existing.discard(key)
    return {key.name} if world.owns(key.name) and state.affects(key, present) else set()


def check(state: InventoryState, world: World) -> None:
    want = full(world)
    assert state.desired == want["desired"]
    assert sorted(d for ds in state.duplicates.values() for d in ds) == want["duplicates"]
    assert sorted(k for ks in state.held_keys.values() for k in ks) == want["held"]
    assert want["create"] == [] and want["delete"] == [], "a full pass would still act"
    assert state.by_member == want["by_member"]
    assert world.started == want["needed"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(registration), st.lists(inventory, max_size=2), st.lists(events, min_size=10))
def test_incremental_placement_equals_the_full_one(registrations, invs, sequence):
    state, world = InventoryState(), World()
    world.regs = {reg.name: reg for reg in registrations}
    world.invs = {inv.namespace: inv for inv in invs}
    run_pass(state, world, state.reset(dict(world.regs), world.invs, world.held, world.owns))
    check(state, world)
    for event in sequence:
        run_pass(state, world, apply(state, world, event))
        check(state, world)


def test_a_member_id_moves_the_profile_within_its_dedupe_group():
    state, world = InventoryState(), World(owned={"east", "east-again"})
    world.invs = {"n0": Inventory(namespace="n0", clustersets=frozenset("a"), member_role="v")}
    for name, server in (("east", SERVERS[0]), ("east-again", SERVERS[1])):
        world.regs[name] = Registration(
            name=name,
            clustersets=("a",),
            connection=ClusterConnection(server=server),
            display_name=name,
            source=name,
        )
    run_pass(state, world, state.reset(dict(world.regs), world.invs, frozenset(), world.owns))
    assert set(state.desired) == {ProfileKey("n0", "east"), ProfileKey("n0", "east-again")}
    for server in (SERVERS[1], SERVERS[0]):  # both reach one member: the first name keeps it
        run_pass(state, world, apply(state, world, ("member-id", server, "u1")))
    assert set(state.desired) == {ProfileKey("n0", "east")}
    assert world.existing == {ProfileKey("n0", "east")}
    # east now reaches another member: east-again's profile comes back, placed by east's event
    run_pass(state, world, apply(state, world, ("member-id", SERVERS[0], "u2")))
    assert set(state.desired) == {ProfileKey("n0", "east"), ProfileKey("n0", "east-again")}
    check(state, world)
    assert state.duplicates == {}


def test_a_held_profile_is_deleted_once_its_registration_is_gone_for_real():
    state, world = InventoryState(), World()
    world.invs = {"n0": Inventory(namespace="n0", clustersets=frozenset("a"), member_role="v")}
    world.existing = {ProfileKey("n0", "r0"), ProfileKey("n0", "r1")}  # no registration left
    world.held = frozenset({"r0"})  # r0's registration is invalid now
    run_pass(state, world, state.reset({}, world.invs, world.held, world.owns) | {"r0", "r1"})
    assert world.existing == {ProfileKey("n0", "r0")}
    assert state.held_keys == {"r0": {ProfileKey("n0", "r0")}}
    run_pass(state, world, apply(state, world, ("held", None)))  # an error naming no member
    run_pass(state, world, apply(state, world, ("stray", "n0", "r2")))
    assert world.existing == {ProfileKey("n0", "r0"), ProfileKey("n0", "r2")}
    run_pass(state, world, apply(state, world, ("held", frozenset())))  # fixed, r0 removed
    assert world.existing == set()
    assert state.held_keys == {}
    check(state, world)


def test_a_newcomer_claiming_a_member_id_never_takes_the_profile_over():
    """Of registrations reaching one member, the one whose profile carries its id keeps it."""
    state, world = InventoryState(), World(owned={"a-newcomer", "b-incumbent"})
    world.invs = {"n0": Inventory(namespace="n0", clustersets=frozenset("a"), member_role="v")}
    for name, server in (("a-newcomer", SERVERS[0]), ("b-incumbent", SERVERS[1])):
        world.regs[name] = Registration(
            name=name,
            clustersets=("a",),
            connection=ClusterConnection(server=server),
            display_name=name,
            source=name,
        )
    run_pass(state, world, state.reset(dict(world.regs), world.invs, frozenset(), world.owns))
    profiles = {("n0", "u1"): ["b-incumbent"]}  # b's profile carries u1 (b reported first)

    def place(name: str):
        return state.place(
            {name},
            member_id=world.member_id,
            pending=world.is_pending,
            existing=world.mine,
            started=world.started,
            holders=lambda ns, mid: profiles.get((ns, mid), []),
        )

    world.conn_ids[conn(SERVERS[1])] = "u1"
    place("b-incumbent")
    world.conn_ids[conn(SERVERS[0])] = "u1"  # the newcomer, first by name, claims u1
    step = place("a-newcomer")
    assert set(state.desired) == {ProfileKey("n0", "b-incumbent")}
    assert step.delete == [ProfileKey("n0", "a-newcomer")]
    assert [(d.registration, d.kept) for d in step.duplicates] == [("a-newcomer", "b-incumbent")]
    # No profile carries it (the incumbent's went): the first by name keeps it.
    profiles.clear()
    place("b-incumbent")
    assert set(state.desired) == {ProfileKey("n0", "a-newcomer")}
