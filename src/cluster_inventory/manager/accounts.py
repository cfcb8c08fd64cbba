"""The consumers' accounts on one member: a ServiceAccount per inventory, its binding, tokens.

Per inventory namespace served, a ServiceAccount in the manager's namespace on the member,
bound to the ClusterRole that inventory asks for (ensured once per connection: a rotation
is one TokenRequest, not five requests), and its tokens minted with TokenRequest, minted
again once ``rotation_fraction`` of the lifetime has passed (``docs/manager.md``). The
upstream ``secretreader`` contract stores them on the hub; nothing here writes to the hub.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    FIELD_MANAGER_CLUSTER_MANAGER,
    LABEL_INVENTORY,
    LABEL_MANAGED_BY,
)
from cluster_inventory.manager.config import ManagerConfig

__all__ = [
    "ConnectedMember",
    "ConsumerAccounts",
    "Grant",
    "list_grants",
    "remove_grants",
    "service_account_name",
]


_log = logging.getLogger("cluster_inventory.manager")


def service_account_name(inventory_namespace: str, manager: str) -> str:
    """Member ServiceAccount serving one hub inventory namespace (a DNS label, <= 63)."""
    name = f"{manager}-{inventory_namespace}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[:52].rstrip('-')}-{digest}"


@dataclass(frozen=True, kw_only=True)
class Grant:
    """One object a cluster manager made on a member for its consumers.

    Attributes:
        kind: ``ServiceAccount`` or ``ClusterRoleBinding``.
        name: Its name.
        namespace: Its namespace ("" for a ClusterRoleBinding).
        inventory: The hub inventory namespace it serves.
        role: The ClusterRole bound ("" for a ServiceAccount).
    """

    kind: str
    name: str
    namespace: str
    inventory: str
    role: str


def _selector(manager: str) -> str:
    return f"{LABEL_MANAGED_BY}={manager},{LABEL_INVENTORY}"


async def list_grants(client: kube.ApiClient, manager: str, namespace: str) -> list[Grant]:
    """What cluster manager ``manager`` holds on a member: its consumers' accounts and bindings.

    Args:
        client: A client of the member.
        manager: The cluster manager's name (``--name``).
        namespace: The manager's namespace on the member (``member_namespace``).

    Returns:
        ServiceAccounts, then ClusterRoleBindings, each by name.

    Raises:
        KubeError: The member cannot be read.
    """
    accounts = await kube.list_objects(
        client, kube.SERVICE_ACCOUNTS, namespace=namespace, label_selector=_selector(manager)
    )
    bindings = await kube.list_objects(
        client, kube.CLUSTER_ROLE_BINDINGS, label_selector=_selector(manager)
    )
    out = [
        Grant(
            kind="ServiceAccount",
            name=str(objects.meta(sa).get("name")),
            namespace=namespace,
            inventory=str(objects.labels_of(sa).get(LABEL_INVENTORY)),
            role="",
        )
        for sa in accounts.get("items") or ()
    ]
    out += [
        Grant(
            kind="ClusterRoleBinding",
            name=str(objects.meta(crb).get("name")),
            namespace="",
            inventory=str(objects.labels_of(crb).get(LABEL_INVENTORY)),
            role=str((crb.get("roleRef") or {}).get("name") or ""),
        )
        for crb in bindings.get("items") or ()
    ]
    return sorted(out, key=lambda g: (g.kind != "ServiceAccount", g.name))


async def remove_grants(client: kube.ApiClient, manager: str, namespace: str) -> int:
    """Delete everything :func:`list_grants` finds (a member left the manager); how many.

    Only objects labelled with this manager's name go: another cluster manager's accounts on
    the same member are not ours to touch.

    Raises:
        KubeError: The member cannot be read or refused a delete (retry later).
    """
    grants = await list_grants(client, manager, namespace)
    for grant in grants:
        if grant.kind == "ServiceAccount":
            await kube.delete(client, kube.SERVICE_ACCOUNTS, grant.name, namespace=namespace)
        else:
            await kube.delete(client, kube.CLUSTER_ROLE_BINDINGS, grant.name)
    return len(grants)


class ConnectedMember(Protocol):
    """What the accounts read of their member connection (``MemberConnection`` is one).

    A Protocol, not the class: ``member`` imports this module, so importing it back would
    make a circle.
    """

    @property
    def client(self) -> kube.ApiClient | None:
        """The member's client once it is connected."""
        ...

    @property
    def label(self) -> str:
        """The member's server, for logs."""
        ...


class ConsumerAccounts:
    """The ServiceAccounts, bindings and tokens a cluster manager keeps on one member.

    Args:
        member: The member connection (its client reaches the member).
        config: The manager's settings (name, ``member_namespace``).
        now: Wall clock (token rotation).
    """

    def __init__(
        self,
        member: ConnectedMember,
        *,
        config: ManagerConfig,
        now: Callable[[], dt.datetime],
    ) -> None:
        self.member = member
        self.config = config
        self.now = now
        #: (inventory, role) -> (token, when it was minted by our clock)
        self._tokens: dict[tuple[str, str], tuple[kube.ServiceAccountToken, dt.datetime]] = {}
        self._token_locks: dict[tuple[str, str], asyncio.Lock] = {}
        #: (ServiceAccount, role) ensured on the member through this connection.
        self._ensured: set[tuple[str, str]] = set()

    def rotation_due(self, inventory: str, role: str, fraction: float) -> dt.datetime | None:
        """When the token for (inventory, role) should be minted again, or None if none yet."""
        entry = self._tokens.get((inventory, role))
        if entry is None:
            return None
        token, issued = entry
        return issued + (token.expiration - issued) * fraction

    def issued_at(self, inventory: str, role: str) -> dt.datetime | None:
        """When the current token for (inventory, role) was minted, or None if none yet."""
        entry = self._tokens.get((inventory, role))
        return None if entry is None else entry[1]

    async def token_for(
        self, inventory: str, role: str, *, lifetime: float, fraction: float
    ) -> kube.ServiceAccountToken:
        """A token of the ServiceAccount serving ``inventory``, minted or reused.

        The account and its ClusterRoleBinding to ``role`` are ensured on the member first.

        Raises:
            KubeAPIError: The member refused (the registration credential lacks RBAC).
        """
        assert self.member.client is not None
        key = (inventory, role)
        lock = self._token_locks.setdefault(key, asyncio.Lock())
        async with lock:
            due = self.rotation_due(inventory, role, fraction)
            if due is not None and self.now() < due:
                return self._tokens[key][0]
            sa = service_account_name(inventory, self.config.name)
            if (sa, role) not in self._ensured:
                await self._ensure_account(sa, inventory, role)
                self._ensured.add((sa, role))
            try:
                minted = await kube.request_service_account_token(
                    self.member.client,
                    self.config.member_namespace,
                    sa,
                    expiration_seconds=int(lifetime),
                )
            except kube.NotFoundError:
                # Someone removed the account since we ensured it: ensure it again.
                self._ensured.discard((sa, role))
                raise
            self._tokens[key] = (minted, self.now())
            return minted

    async def _ensure_account(self, sa: str, inventory: str, role: str) -> None:
        assert self.member.client is not None
        client, ns = self.member.client, self.config.member_namespace
        labels = {LABEL_INVENTORY: inventory, LABEL_MANAGED_BY: self.config.name}
        try:
            await kube.create(client, kube.NAMESPACES, {"metadata": {"name": ns}})
        except kube.AlreadyExistsError:
            pass
        await kube.apply(
            client,
            kube.SERVICE_ACCOUNTS,
            {"metadata": {"name": sa, "namespace": ns, "labels": labels}},
            field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
        )
        await kube.apply(
            client,
            kube.CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": f"{sa}:{role}", "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
            },
            field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
        )
        # A changed role must not leave the old binding (and its rights) behind.
        bindings = await kube.list_objects(
            client, kube.CLUSTER_ROLE_BINDINGS, label_selector=f"{LABEL_INVENTORY}={inventory}"
        )
        for binding in bindings.get("items") or ():
            name = str(objects.meta(binding).get("name"))
            if name.startswith(f"{sa}:") and name != f"{sa}:{role}":
                await kube.delete(client, kube.CLUSTER_ROLE_BINDINGS, name)

    async def forget_inventory(self, inventory: str) -> None:
        """Delete the ServiceAccount and bindings serving ``inventory`` (its tokens die too)."""
        if self.member.client is None:
            return
        for key in [k for k in self._tokens if k[0] == inventory]:
            self._tokens.pop(key, None)
        sa = service_account_name(inventory, self.config.name)
        self._ensured = {entry for entry in self._ensured if entry[0] != sa}
        try:
            bindings = await kube.list_objects(
                self.member.client,
                kube.CLUSTER_ROLE_BINDINGS,
                label_selector=f"{LABEL_INVENTORY}={inventory}",
            )
            for binding in bindings.get("items") or ():
                name = str(objects.meta(binding).get("name"))
                # Another cluster manager serving the same inventory on this member has its
                # own ServiceAccount and bindings: only ours (named after our account) go.
                if name.startswith(f"{sa}:"):
                    await kube.delete(self.member.client, kube.CLUSTER_ROLE_BINDINGS, name)
            await kube.delete(
                self.member.client,
                kube.SERVICE_ACCOUNTS,
                sa,
                namespace=self.config.member_namespace,
            )
        except kube.KubeError as exc:
            _log.warning(
                "could not remove %s on member: %s", sa, exc, extra={"cluster": self.member.label}
            )
