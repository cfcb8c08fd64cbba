"""The demo's plan and shared pieces: inventories, members, what it saw, waiting, errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from cluster_inventory import kube
from cluster_inventory.api.constants import FIELD_MANAGER_DEMO
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE
from cluster_inventory.testing import Fleet

#: ClusterProperty names published on every member (KEP-2149 objects in ``about.k8s.io``;
#: short names keep the demo's table narrow, a real fleet would use domain-qualified ones).
PROPERTY_REGION = "region"
PROPERTY_ACCOUNT_ID = "account-id"
#: The consumer: a hub ServiceAccount in the first inventory namespace.
CONSUMER = "demo-consumer"
#: The hub ConfigMap the runtime example copies to ``default`` on each member.
SYNCED_CONFIGMAP = "fleet-settings"
MANAGER_NAMESPACE = DEFAULT_NAMESPACE
T = TypeVar("T")
_REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "eu-central-1", "us-west-2")


@dataclass(frozen=True)
class DemoInventory:
    """An inventory namespace of the demo and the member ClusterRole its consumers get."""

    namespace: str
    clusterset: str
    member_role: str


#: team-a may write on members (the runtime example writes ConfigMaps); team-b only reads.
INVENTORIES = (
    DemoInventory("team-a", "prod", "edit"),
    DemoInventory("team-b", "staging", "view"),
)


@dataclass(frozen=True)
class DemoMember:
    """A member cluster of the demo: its cluster sets and the properties it publishes."""

    name: str
    clustersets: tuple[str, ...]
    region: str
    account_id: str


def demo_members(count: int) -> list[DemoMember]:
    """``count`` members: member1 in prod, member2 in prod and staging, member3 in staging, ...

    Raises:
        ValueError: ``count`` is below 1.
    """
    if count < 1:
        raise ValueError(f"members: {count} is below 1")
    sets = (("prod",), ("prod", "staging"), ("staging",))
    return [
        DemoMember(
            name=f"member{i}",
            clustersets=sets[(i - 1) % 3],
            region=_REGIONS[(i - 1) % len(_REGIONS)],
            account_id=str(i) * 12,
        )
        for i in range(1, count + 1)
    ]


class DemoError(Exception):
    """A demo step failed.

    Attributes:
        step: The step, as shown in the progress display.
        problem: What went wrong (never a credential).
    """

    def __init__(self, step: str, problem: str) -> None:
        super().__init__(f"demo failed while {step}: {problem}")
        self.step = step
        self.problem = problem


@dataclass
class Outcome:
    """What the demo saw, for the summary."""

    profiles: list[dict[str, Any]] = field(default_factory=list)
    ready_after: float = 0.0
    reached: list[str] = field(default_factory=list)
    refused: str = ""
    down_after: float = 0.0
    up_after: float = 0.0
    served: tuple[int, int] = (0, 0)
    #: The consumer that reached the isolated member through the cluster proxy ("" if none).
    through_proxy: str = ""


class DemoRun(Protocol):
    """What a step of the demo reads of its run (``_demo.Demo`` is one).

    The steps live in modules of their own and ``_demo`` imports them, so they see the run
    through this Protocol rather than importing ``Demo`` back (no import circle).
    """

    fleet: Fleet
    members: list[DemoMember]
    out: Callable[[str], None]
    outcome: Outcome
    ready_timeout: float

    @property
    def outage_member(self) -> str:
        """The member whose API server the demo stops."""
        ...

    def expected_profiles(self) -> list[tuple[str, str]]:
        """``(inventory namespace, member)`` of every profile the manager should make."""
        ...

    def check_manager(self) -> None:
        """Raise if the cluster manager process exited."""
        ...

    def step(self, title: str, total: int | None = None) -> AbstractAsyncContextManager[Any]:
        """Show ``title`` while the block runs; a failure names the step."""
        ...

    async def apply_on_member(self, name: str, manifests: list[dict[str, Any]]) -> None:
        """Apply ``manifests`` on member ``name`` as its admin (where it runs)."""
        ...

    async def stop_member(self, name: str) -> None:
        """Stop member ``name``'s API server (an outage)."""
        ...

    async def start_member(self, name: str) -> None:
        """Start member ``name``'s API server again."""
        ...


def manifest(resource: kube.Resource, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as a full object of ``resource`` (its ``apiVersion`` and ``kind`` set)."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, **body}


async def poll(
    check: Callable[[], Awaitable[T | None]], timeout: float, why: Callable[[], str]
) -> T:
    """Call ``check`` every 0.5 s until it returns a value; TimeoutError naming ``why()``."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done after {timeout:.0f} s: {why()}")
        await asyncio.sleep(0.5)


def explain(exc: BaseException) -> str:
    """A failure in a few words for the demo's error line."""
    if isinstance(exc, asyncio.CancelledError):
        return "interrupted"
    return str(exc) or type(exc).__name__


async def register_one(
    hub: kube.ApiClient, fleet: Fleet, member: DemoMember, clustersets: list[str]
) -> None:
    """Write ``member``'s registration Secret for ``clustersets`` (what ``register`` writes)."""
    from cluster_inventory.manager import registration_secret

    cp = fleet.member(member.name)
    secret = registration_secret(
        member.name, MANAGER_NAMESPACE, cp.kubeconfig_path.read_text(), clustersets
    )
    await kube.apply(hub, kube.SECRETS, secret, field_manager=FIELD_MANAGER_DEMO)
