"""The token controller: each profile's consumer token Secret, minted and rotated, or copied.

For a probed member the controller mints through the member's
:class:`~cluster_inventory.manager.members.accounts.ConsumerAccounts` and applies the Secret
(:func:`~cluster_inventory.manager.rules.token_secrets.token_secret`) when its data changed;
for an agent member it copies the token the member's agent keeps on the hub
(:mod:`~cluster_inventory.manager.members.agent_credentials`, ``docs/agent.md``). A profile is
queued by its token Secret's events, by its agent's credential Secret's, and once its status
was reconciled with its member joined (the status controller's ``joined`` channel).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Sized
from typing import Any, Protocol

from cluster_inventory import kube
from cluster_inventory.api import format_time, objects
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_ISSUED,
    FIELD_MANAGER_CLUSTER_MANAGER,
    LABEL_TOKEN_FOR,
)
from cluster_inventory.controller import Controller, Result
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.controllers.targets import ProfileTargets
from cluster_inventory.manager.members.agent_credentials import AgentCredentials
from cluster_inventory.manager.members.agent_member import AgentMember
from cluster_inventory.manager.rules.inventory import ProfileKey
from cluster_inventory.manager.rules.inventory_state import DeletedProfile
from cluster_inventory.manager.rules.member_keys import AgentMemberKey
from cluster_inventory.manager.rules.token_secrets import (
    adoption_due,
    token_annotations,
    token_secret,
    token_secret_data,
)

__all__ = ["NAME", "STATUS_FIRST_WAIT", "TokenController"]

_log = logging.getLogger("cluster_inventory.manager")
#: The controller's name (its work queue and metrics).
NAME = "clustermanager-tokens"
#: Seconds first tokens wait at most for the status queue to empty (:meth:`release`).
STATUS_FIRST_WAIT = 30.0
_RECHECK = 1.0


class Starts(Protocol):
    """Whether members are still starting (the member pool)."""

    @property
    def starting(self) -> bool:
        """True while some member is still starting."""
        ...


class TokenController:
    """Reconciles the consumer token Secret of each profile this replica keeps, by profile key.

    Args:
        hub: The hub view (client, token Secret cache, settings, clock).
        targets: What a profile key stands for.
        members: Whether members are still starting (the member pool).
        credentials: Agent members' credential Secrets (their agents mint the tokens).
        statuses: The status controller's backlog (its queue's length): first tokens wait
            for it (:meth:`release`).

    Attributes:
        controller: The controller running :meth:`reconcile` over the token Secrets and the
            agent credential Secrets, with a quarter as many workers as the status
            controller: status (what every consumer reads first) is never queued behind
            token minting.
    """

    def __init__(
        self,
        hub: HubView,
        targets: ProfileTargets,
        members: Starts,
        credentials: AgentCredentials,
        statuses: Sized,
    ) -> None:
        self.hub = hub
        self.targets = targets
        self.members = members
        self.agents = credentials
        self._statuses = statuses
        #: What this process last wrote to each token Secret: (digest of its data, its
        #: resourceVersion).
        #: The hub cache holds the Secrets' metadata only (no token sits in every replica's
        #: memory), so a Secret is current when its resourceVersion is the one we wrote.
        self._stored: dict[ProfileKey, tuple[str, str]] = {}
        #: First tokens waiting until no member is starting and no status is queued.
        self._parked: set[ProfileKey] = set()
        #: Monotonic time since when parked tokens wait for the status queue, and its timer.
        self._waiting_since: float | None = None
        self._recheck: asyncio.TimerHandle | None = None
        self.controller: Controller[ProfileKey] = (
            hub.controller(NAME, self.reconcile, workers=max(1, hub.config.workers // 4))
            .watch(hub.token_secrets, self.token_keys)
            .watch(credentials.secrets, self.agent_keys)
        )

    # -- what queues a profile -----------------------------------------------------------
    def token_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        """The profile a token Secret's event queues (label ``cluster-inventory.dev/token-for``)."""
        meta = objects.meta(obj)
        key = ProfileKey(
            str(meta.get("namespace")), str((meta.get("labels") or {}).get(LABEL_TOKEN_FOR))
        )
        return [key] if key in self.targets else []

    def agent_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        """The token keys an agent credential Secret's event queues (its member's profiles)."""
        by_member, namespace = self.targets.state.by_member, self.agents.namespace
        return self.agents.keys(
            event, obj, lambda name: by_member.get(AgentMemberKey(namespace, name), ())
        )

    def queue(self, key: ProfileKey) -> None:
        """Keep the token Secret of ``key`` (its status was reconciled, its member joined)."""
        self.controller.queue.add(key)

    def release(self) -> None:
        """Queue the first tokens parked while members were starting (none start any more).

        Once the status queue is empty too, checked every second for at most
        :data:`STATUS_FIRST_WAIT` seconds: at the end of a cold start members have all
        answered while thousands of statuses are still to be written, and minting then (five
        member requests and a hub write per profile) slowed the statuses down, which every
        consumer reads first (``docs/scale.md``).
        """
        if not self._parked:
            return
        now = time.monotonic()
        since = self._waiting_since = self._waiting_since or now
        if len(self._statuses) and now - since < STATUS_FIRST_WAIT:
            if self._recheck is None:
                loop = asyncio.get_running_loop()
                self._recheck = loop.call_later(_RECHECK, self._release_again)
            return
        self._waiting_since = None
        parked, self._parked = self._parked, set()
        for key in parked:
            self.controller.queue.add(key)

    def _release_again(self) -> None:
        self._recheck = None
        if not self.members.starting:
            self.release()

    def close(self) -> None:
        """Cancel a pending re-check of the status queue (the manager stops)."""
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None

    def profile_deleted(self, gone: DeletedProfile) -> None:
        """Forget what was written for a profile that was deleted (its Secret went with it)."""
        self.forget(gone.key)

    def forget(self, key: ProfileKey) -> None:
        """Forget what was written for ``key``."""
        self._stored.pop(key, None)

    # -- the reconcile -------------------------------------------------------------------
    async def reconcile(self, key: ProfileKey) -> Result | None:
        """Keep the consumer token Secret ``<inventory>/<profile>`` current.

        Runs on its own queue with fewer workers, so that status (what every consumer reads
        first) is never queued behind token minting; and a token not minted yet waits while
        members are still starting (a cold start, a dead replica's share): minting takes five
        requests per member, and on a busy fleet it made the first probes of the others fail.

        Returns:
            A requeue when the token's rotation is due, or None (also for a first token
            parked until no member is starting: :meth:`release`).

        Raises:
            KubeAPIError: Minting on the member or writing the Secret failed (retried).
        """
        due_in = await self._keep(key)
        return None if due_in is None else Result(requeue_after=due_in)

    async def _keep(self, key: ProfileKey) -> float | None:
        """:meth:`reconcile`'s work; seconds until the token is due again, or None."""
        hub, config = self.hub, self.hub.config
        target = self.targets.get(key)
        if target is None:
            return None
        _, inv, current, member = target
        if current is None or member is None or member.observation.joined.status != "True":
            return None
        if member.accounts is None:  # an agent member: its agent mints, we copy
            return await self._copy_agent_token(key, current, member)
        role = inv.member_role
        if role is None or not inv.granted:
            # No grant (its role is refused, or it is being deleted): no token, and none
            # left in its Secret (the account it was minted for goes, docs/manager.md).
            await self._withdraw(key)
            return None
        if member.accounts.issued_at(inv.namespace, role) is None:
            # Taken over, or we restarted: the token the Secret holds stands until its
            # rotation is due, if it was minted for this member and role.
            due = adoption_due(
                hub.token_secrets.get(str(key)),
                member_id=member.observation.member_id,
                role=role,
                fraction=config.rotation_fraction,
            )
            if due is not None and hub.now() < due:
                return max(1.0, (due - hub.now()).total_seconds())
        if self.members.starting and member.accounts.rotation_due(inv.namespace, role, 1.0) is None:
            # Parked, not requeued: thousands of keys requeued every few seconds while
            # members start were a sixth of a replica's CPU (py-spy). release() queues them.
            self._parked.add(key)
            return None
        try:
            token = await member.accounts.token_for(
                inv.namespace,
                role,
                lifetime=config.token_lifetime,
                fraction=config.rotation_fraction,
            )
        except (kube.KubeError, RuntimeError):
            if member.closed:
                # The member left this replica (moved, deregistered, shutdown) while we
                # minted: its client is closed and the key is no longer ours to serve.
                return None
            raise
        if token is None:  # the grant went while we waited: its profile's reconcile follows
            return None
        issued = member.accounts.issued_at(inv.namespace, role) or hub.now()
        notes = token_annotations(
            issued=issued,
            expiration=token.expiration,
            member_id=member.observation.member_id or "",
            role=role,
        )
        await self._store_token(key, current, token, notes)
        due = member.accounts.rotation_due(inv.namespace, role, config.rotation_fraction)
        return max(1.0, (due - hub.now()).total_seconds()) if due else None

    async def _withdraw(self, key: ProfileKey) -> None:
        """Delete the token Secret of ``key`` if one exists (its inventory has no grant)."""
        if self.hub.token_secrets.get(str(key)) is None:
            return
        await kube.delete(self.hub.client, kube.SECRETS, key.name, namespace=key.namespace)
        self.forget(key)
        _log.info("deleted member token: its inventory has no grant", extra={"object": str(key)})

    async def _copy_agent_token(
        self, key: ProfileKey, profile: dict[str, Any], member: AgentMember
    ) -> float | None:
        """Copy the token an agent member's agent keeps into ``key``'s Secret, if it changed.

        Returns:
            Seconds until that token expires (to report it then if no new one came), or
            None: no token kept (yet), or an expired one (reported once, nothing written).
        """
        version, kept = await self.agents.token(member.name) or ("", None)
        if kept is None:
            return None
        now = self.hub.now()
        if kept.expiration <= now:
            self.agents.report_expired(member.name, version, kept.expiration)
            return None
        notes = token_annotations(
            issued=kept.issued or now,
            expiration=kept.expiration,
            member_id=member.observation.member_id or "",
            role=kept.grant,
        )
        if kept.issued is None:  # not said: left out, not "now" (a write per reconcile)
            del notes[ANNOTATION_TOKEN_ISSUED]
        held = objects.annotations_of(self.hub.token_secrets.get(str(key)) or {})
        if key in self._stored or any(held.get(k) != v for k, v in notes.items()):
            # A Secret this process did not write that holds this token already (a restart
            # or a takeover finds it there) is not written again: no write per profile.
            token = kube.ServiceAccountToken(token=kept.token, expiration=kept.expiration)
            await self._store_token(key, profile, token, notes)
        return max(1.0, (kept.expiration - now).total_seconds())

    async def _store_token(
        self,
        key: ProfileKey,
        profile: dict[str, Any],
        token: kube.ServiceAccountToken,
        annotations: dict[str, str],
    ) -> None:
        data = token_secret_data(token)
        digest = hashlib.sha256(
            json.dumps([data, annotations], sort_keys=True).encode()
        ).hexdigest()
        existing = self.hub.token_secrets.get(str(key))
        stored = self._stored.get(key)
        if (
            existing is not None
            and stored is not None
            and stored[0] == digest
            and stored[1] == objects.meta(existing).get("resourceVersion")
        ):
            return
        secret = token_secret(
            key,
            profile_uid=objects.meta(profile).get("uid"),
            manager=self.hub.config.name,
            data=data,
            annotations=annotations,
        )
        written = await kube.apply(
            self.hub.client, kube.SECRETS, secret, field_manager=FIELD_MANAGER_CLUSTER_MANAGER
        )
        self._stored[key] = (digest, str(objects.meta(written).get("resourceVersion")))
        _log.info(
            "stored member token",
            extra={"object": str(key), "expires": format_time(token.expiration)},
        )
