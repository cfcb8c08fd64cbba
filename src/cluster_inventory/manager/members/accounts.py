"""The consumers' accounts on one member: held grants, kept to what is needed, and tokens.

Per inventory granted (:mod:`.grants`), a ServiceAccount in the manager's namespace on the
member, bound to the ClusterRole the inventory gets, and its tokens minted with TokenRequest,
minted again once ``rotation_fraction`` of the lifetime has passed (``docs/manager.md``).
What the manager holds on the member is read with one LIST per kind by its own labels once
per connection (:meth:`ConsumerAccounts.relist` on a reconnect), then kept up to date by its
own writes; anything held that is not needed is removed (:meth:`ConsumerAccounts.sync`), and
nothing is created that is not needed at that moment. Nothing here writes to the hub.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    FIELD_MANAGER_CLUSTER_MANAGER,
    LABEL_INVENTORY,
    LABEL_MANAGED_BY,
)
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.grants import (
    BINDING,
    SERVICE_ACCOUNT,
    Grant,
    Needs,
    grant_of,
    grant_selector,
    needed_grants,
    service_account_name,
    unneeded,
    whole,
)

__all__ = [
    "NOTHING_KNOWN",
    "ConnectedMember",
    "ConsumerAccounts",
    "list_grants",
    "remove_grants",
]


_log = logging.getLogger("cluster_inventory.manager")
#: Needs of a member whose cluster manager says nothing: no grant made, none removed.
NOTHING_KNOWN = Needs(roles={}, complete=False)


async def list_grants(client: kube.ApiClient, manager: str, namespace: str) -> list[Grant]:
    """What cluster manager ``manager`` holds on a member: its consumers' accounts and bindings.

    Two LISTs by the manager's labels (:func:`.grants.grant_selector`); of what they find,
    only the objects named as the manager names them count (:func:`.grants.grant_of`).

    Args:
        client: A client of the member.
        manager: The cluster manager's name (``--name``).
        namespace: The manager's namespace on the member (``member_namespace``).

    Returns:
        The grants held, sorted by inventory, kind and name.

    Raises:
        KubeError: The member cannot be read (never "nothing held").
    """
    selector = grant_selector(manager)
    accounts = await kube.list_objects(
        client, kube.SERVICE_ACCOUNTS, namespace=namespace, label_selector=selector
    )
    bindings = await kube.list_objects(client, kube.CLUSTER_ROLE_BINDINGS, label_selector=selector)
    found = [grant_of(sa, SERVICE_ACCOUNT, manager) for sa in accounts.get("items") or ()]
    found += [grant_of(crb, BINDING, manager) for crb in bindings.get("items") or ()]
    return sorted((grant for grant in found if grant is not None), key=lambda g: g.order)


async def remove_grants(client: kube.ApiClient, grants: Iterable[Grant]) -> int:
    """Delete ``grants`` on a member (one gone already counts as removed); how many.

    Raises:
        KubeError: The member refused a delete or did not answer (retry later).
    """
    removed = 0
    for grant in grants:
        if grant.kind == SERVICE_ACCOUNT:
            await kube.delete(client, kube.SERVICE_ACCOUNTS, grant.name, namespace=grant.namespace)
        else:
            await kube.delete(client, kube.CLUSTER_ROLE_BINDINGS, grant.name)
        removed += 1
        _log.info(
            "removed %s %s on the member (inventory %s): no longer needed",
            grant.kind,
            grant.name,
            grant.inventory,
        )
    return removed


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

    Grants follow what the member needs (``needs``, asked afresh each time, never kept): a
    token is minted, and its account and binding made, only for an inventory and role needed
    at that moment; :meth:`sync` removes whatever is held and not needed. One grant change at
    a time on the member (a lock), so a sync and a mint never interleave their reads and
    writes.

    Args:
        member: The member connection (its client reaches the member).
        config: The manager's settings (name, ``member_namespace``).
        now: Wall clock (token rotation).
        needs: What the member needs of this manager now (:class:`.grants.Needs`).
    """

    def __init__(
        self,
        member: ConnectedMember,
        *,
        config: ManagerConfig,
        now: Callable[[], dt.datetime],
        needs: Callable[[], Needs] = lambda: NOTHING_KNOWN,
    ) -> None:
        self.member = member
        self.config = config
        self.now = now
        self.needs = needs
        #: (inventory, role) -> (token, when it was minted by our clock)
        self._tokens: dict[tuple[str, str], tuple[kube.ServiceAccountToken, dt.datetime]] = {}
        self._token_locks: dict[tuple[str, str], asyncio.Lock] = {}
        #: What this manager holds on the member, by (kind, name): listed once per
        #: connection, then kept by our own writes and deletes. None: not read yet.
        self._held: dict[tuple[str, str], Grant] | None = None
        self._stale = False
        self._changes = asyncio.Lock()

    def relist(self) -> None:
        """Read what is held again before the next change (the member reconnected)."""
        self._stale = True

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

    async def sync(self) -> int:
        """Remove what the manager holds on the member and nothing needs; how many objects.

        Reads what is held first if it was not read on this connection (a LIST per kind).
        Nothing is removed while :attr:`.grants.Needs.complete` is False.

        Raises:
            KubeError: The member cannot be read or refused a delete (retry later); what
                was not removed is still held.
        """
        async with self._changes:
            held = await self._load()
            return await self._prune(held, self.needs())

    async def token_for(
        self, inventory: str, role: str, *, lifetime: float, fraction: float
    ) -> kube.ServiceAccountToken | None:
        """A token of the ServiceAccount serving ``inventory``, minted or reused.

        The account and its ClusterRoleBinding to ``role`` are made on the member first if
        they are not held whole, and what nothing needs is removed (a changed role's old
        binding).

        Returns:
            The token, or None: the member does not need (inventory, role) now (the
            inventory went, or its role changed or is refused), so nothing is made.

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
            async with self._changes:
                held = await self._load()
                needs = self.needs()
                if needs.roles.get(inventory) != role:
                    return None
                wanted = needed_grants(
                    {inventory: role},
                    manager=self.config.name,
                    namespace=self.config.member_namespace,
                )
                if not whole(held, wanted):
                    await self._ensure_account(held, wanted)
                await self._prune(held, needs)
            try:
                minted = await kube.request_service_account_token(
                    self.member.client,
                    self.config.member_namespace,
                    sa,
                    expiration_seconds=int(lifetime),
                )
            except kube.NotFoundError:
                # Someone removed the account since: make it again next time.
                held.pop((SERVICE_ACCOUNT, sa), None)
                raise
            self._tokens[key] = (minted, self.now())
            return minted

    async def _load(self) -> dict[tuple[str, str], Grant]:
        """What is held, read from the member if not read on this connection yet."""
        if self._held is None or self._stale:
            assert self.member.client is not None
            self._stale = False
            found = await list_grants(
                self.member.client, self.config.name, self.config.member_namespace
            )
            self._held = {grant.key: grant for grant in found}
        return self._held

    async def _prune(self, held: dict[tuple[str, str], Grant], needs: Needs) -> int:
        gone = unneeded(
            held.values(), needs, manager=self.config.name, namespace=self.config.member_namespace
        )
        assert self.member.client is not None
        for grant in gone or ():
            await remove_grants(self.member.client, [grant])
            held.pop(grant.key, None)
            if grant.kind == SERVICE_ACCOUNT:  # its tokens stopped working with it
                for key in [k for k in self._tokens if k[0] == grant.inventory]:
                    del self._tokens[key]
        return len(gone or ())

    async def _ensure_account(
        self, held: dict[tuple[str, str], Grant], wanted: list[Grant]
    ) -> None:
        assert self.member.client is not None
        client, ns = self.member.client, self.config.member_namespace
        account = next(g for g in wanted if g.kind == SERVICE_ACCOUNT)
        binding = next(g for g in wanted if g.kind == BINDING)
        labels = {LABEL_INVENTORY: account.inventory, LABEL_MANAGED_BY: self.config.name}
        try:
            await kube.create(client, kube.NAMESPACES, {"metadata": {"name": ns}})
        except kube.AlreadyExistsError:
            pass
        await kube.apply(
            client,
            kube.SERVICE_ACCOUNTS,
            {"metadata": {"name": account.name, "namespace": ns, "labels": labels}},
            field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
        )
        held[account.key] = account
        await kube.apply(
            client,
            kube.CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": binding.name, "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": binding.role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": account.name, "namespace": ns}],
            },
            field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
        )
        held[binding.key] = binding
