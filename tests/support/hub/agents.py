"""The hub side of an accepted agent member, as ``manager accept`` leaves it (test code only).

``accept`` creates, in a hub namespace, the MemberReport, the Lease and the empty credential
Secret of a member and the Role and RoleBinding that let the agent's identity of one
acceptance (``cluster-inventory:agent:NAME`` in the groups ``cluster-inventory:agents`` and
``cluster-inventory:acceptance:NAME:ACC``) get, update and patch those three objects and
nothing else (``docs/agent.md``). ``running`` runs a reporter or heartbeat for the length of a block;
``AgentProcess`` is one ``cluster-inventory agent run`` process, its stderr read as it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.agent import AgentIdentity, new_private_key, request_certificate
from cluster_inventory.api.agents import acceptance_group, new_acceptance_id
from cluster_inventory.api.constants import (
    AGENT_GROUP,
    AGENT_USER_PREFIX,
    LABEL_AGENT,
)
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager.admin.agents import Acceptance, agent_objects
from cluster_inventory.manager.admin.agents import accept as manager_accept
from cluster_inventory.manager.rules.registration import is_agent_registration
from cluster_inventory.testing import ControlPlane

ACCEPT = "accept-in-test"
CLI = Path(sys.executable).parent / "cluster-inventory"
#: The cluster manager's namespace on the join hub (``join_hub`` in the agent tests' conftest).
JOIN_NS = "cluster-inventory-system"


@dataclass
class Accepted:
    """The accepted member: its name, the hub namespace, the member and the agent's clients."""

    name: str
    namespace: str
    member: ControlPlane
    hub: kube.ApiClient  # the agent's identity: its two objects only
    admin: kube.ApiClient  # the hub's admin, to read what the agent wrote
    acceptance: str  # the acceptance id the agent's identity carries in its groups

    @property
    def user(self) -> str:
        """The agent identity's user name."""
        return AGENT_USER_PREFIX + self.name

    @property
    def groups(self) -> list[str]:
        """The agent identity's groups (its certificate's O values)."""
        return agent_groups(self.name, self.acceptance)

    async def report(self) -> dict[str, Any]:
        return await kube.get(self.admin, kube.MEMBER_REPORTS, self.name, self.namespace)

    async def lease(self) -> dict[str, Any]:
        return await kube.get(self.admin, kube.LEASES, self.name, self.namespace)


def agent_groups(name: str, acceptance: str) -> list[str]:
    """The groups of an agent certificate of member ``name``'s acceptance ``acceptance``."""
    return [AGENT_GROUP, acceptance_group(name, acceptance)]


async def accept(admin: kube.ApiClient, name: str, namespace: str) -> str:
    """What ``manager accept NAME`` leaves on the hub for the agent's own objects; its
    acceptance id.

    The namespaced objects of :func:`~cluster_inventory.manager.admin.agents.agent_objects`
    (the Lease, MemberReport, credential Secret, Role and RoleBinding), applied as the test's
    admin; not the registration Secret (no cluster manager takes the member up) nor the
    cluster-scoped CSR rules (they would outlive the test's namespace).
    """
    acceptance = Acceptance(namespace, name, new_acceptance_id())
    for resource, obj in agent_objects(acceptance, ["prod"]):
        if resource.namespaced and not is_agent_registration(obj):
            await kube.apply(admin, resource, obj, field_manager=ACCEPT)
    return acceptance.id


def bootstrap_identity(hub: ControlPlane, acceptance: Acceptance) -> kube.ClusterConnection:
    """The identity ``manager bootstrap-kubeconfig --member NAME`` issues for ``acceptance``
    (a client certificate of the hub's client CA, as the hub's signer makes it)."""
    return hub.connection(acceptance.bootstrap_user, list(acceptance.bootstrap_groups))


def agent_identity(hub: ControlPlane, acceptance: Acceptance) -> kube.ClusterConnection:
    """The identity the approver lets ``acceptance``'s agent obtain, made by the test CA."""
    return hub.connection(acceptance.agent_user, list(acceptance.agent_groups))


async def join(
    hub: ControlPlane, admin: kube.ApiClient, name: str, *, namespace: str = JOIN_NS
) -> tuple[Acceptance, AgentIdentity]:
    """Accept ``name`` (``manager.agents.accept``), then join with its bootstrap identity on
    a hub whose cluster manager approves at once: the acceptance and the agent's identity."""
    acceptance = await manager_accept(admin, namespace, name, ["prod"])
    key = new_private_key()
    async with await kube.new_client(bootstrap_identity(hub, acceptance)) as boot:
        cert = await request_certificate(boot, name, acceptance.id, key, timeout=60)
    return acceptance, AgentIdentity(name=name, key_pem=key, cert_pem=cert)


async def may(
    client: kube.ApiClient,
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str = "",
    name: str = "",
    subresource: str = "",
) -> bool:
    """``kubectl auth can-i`` for ``client``'s own identity (a SelfSubjectAccessReview)."""
    attributes = {
        "verb": verb,
        "resource": resource,
        "group": group,
        "namespace": namespace,
        "name": name,
        "subresource": subresource,
    }
    review = await kube.request(
        client,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {k: v for k, v in attributes.items() if v}},
        },
    )
    return bool(review["status"].get("allowed"))


async def until(
    informer: Informer, found: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """The first object of a running ``informer`` for which ``found`` holds (woken by its
    events, never polled)."""
    changed = asyncio.Event()

    def wake(*_: object) -> None:
        changed.set()

    informer.add_handler(wake)
    try:
        async with asyncio.timeout(timeout):
            await informer.wait_synced()
            while True:
                for obj in informer.items():
                    if found(obj):
                        return obj
                changed.clear()
                await changed.wait()
    finally:
        informer.remove_handler(wake)


async def event_about(
    client: kube.ApiClient, name: str, reason: str, namespace: str = "default"
) -> dict[str, Any]:
    """The Event the approver recorded on object ``name`` with ``reason`` (Events of a
    cluster-scoped object, a CSR, live in ``default``)."""
    informer = Informer(
        client, kube.EVENTS, namespace=namespace, field_selector=f"regarding.name={name}"
    )
    async with informer:
        return await until(informer, lambda e: e.get("reason") == reason)


async def agent_csrs(admin: kube.ApiClient, name: str) -> list[dict[str, Any]]:
    """The CertificateSigningRequests of member ``name``'s agent (by their label)."""
    listed = await kube.list_objects(
        admin, kube.CERTIFICATE_SIGNING_REQUESTS, label_selector=f"{LABEL_AGENT}={name}"
    )
    return list(listed["items"])


async def self_subject(client: kube.ApiClient) -> dict[str, Any]:
    """Who ``client`` is on its server (a SelfSubjectReview's ``userInfo``)."""
    review = await kube.request(
        client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    return dict(review["status"]["userInfo"])


@contextlib.asynccontextmanager
async def running(coro: Any) -> AsyncIterator[asyncio.Task[Any]]:
    """Run ``coro`` as a task for the block; cancelled after it (its failure is raised)."""
    task = asyncio.get_running_loop().create_task(coro)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task  # raises what the task raised, if it failed


class AgentProcess:
    """One ``cluster-inventory agent run`` process; its stderr read line by line as it comes."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.lines: list[str] = []
        self._new_line = asyncio.Event()
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.lines.clear()
        self.proc = await asyncio.create_subprocess_exec(
            str(CLI), "agent", "run", *self.args, stderr=asyncio.subprocess.PIPE
        )
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.lines.append(line.decode())
            self._new_line.set()
        self._new_line.set()

    def count(self, needle: str) -> int:
        """How many lines so far hold ``needle``."""
        return sum(needle in line for line in self.lines)

    async def said(self, needle: str, timeout: float = 60, *, times: int = 1) -> str:
        """Wait until ``needle`` is in ``times`` lines; the last of them (fails if it ends)."""
        async with asyncio.timeout(timeout):
            while True:
                found = [line for line in self.lines if needle in line]
                if len(found) >= times:
                    return found[times - 1]
                assert self._reader is not None
                if self._reader.done():
                    raise AssertionError(f"agent ended without {needle!r}:\n{self.text}")
                self._new_line.clear()
                await self._new_line.wait()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def ended(self, timeout: float = 60) -> int:
        """Wait until the process exits by itself; its exit code."""
        assert self.proc is not None and self._reader is not None
        async with asyncio.timeout(timeout):
            await self._reader
            return await self.proc.wait()

    async def stop(self) -> int:
        assert self.proc is not None and self._reader is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            await self._reader
            return await self.proc.wait()
