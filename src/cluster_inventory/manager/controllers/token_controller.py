"""The consumer token Secret ``<inventory>/<profile>``: what the manager writes, as data.

The upstream ``secretreader`` plugin's contract (KEP-5339; ``docs/manager.md``): a Secret
named after the profile, in the profile's namespace, key ``token``. The manager also
stores ``expirationTimestamp`` (RFC 3339), so our plugin emits the ExecCredential's expiry
and consumers cache the credential until then. The Secret is owned by its ClusterProfile
(deleted with it by the garbage collector) and labelled with the manager and the profile.
:func:`token_secret` is pure; :class:`TokenController` keeps the Secrets current: it mints
through the member's :class:`~cluster_inventory.manager.accounts.ConsumerAccounts` and
applies the Secret when its data changed. For an agent member it copies the token the
member's agent keeps on the hub (:mod:`.agent_credentials`, ``docs/agent.md``).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.api import format_time, objects
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_EXPIRES,
    ANNOTATION_TOKEN_GRANT,
    ANNOTATION_TOKEN_ISSUED,
    FIELD_MANAGER_CLUSTER_MANAGER,
    GROUP,
    LABEL_CLUSTER_MANAGER,
    LABEL_TOKEN_FOR,
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
    TOKEN_SECRET_TYPE,
    V1ALPHA1,
)
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.api.views import parse_time
from cluster_inventory.manager.rules.inventory import ProfileKey
from cluster_inventory.manager.rules.member_keys import AgentMemberKey

if TYPE_CHECKING:
    from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable
    from cluster_inventory.manager.members.agent_credentials import AgentCredentials
    from cluster_inventory.manager.members.agent_member import AgentMember

__all__ = [
    "TokenController",
    "adoption_due",
    "token_annotations",
    "token_secret",
    "token_secret_data",
]

_log = logging.getLogger("cluster_inventory.manager")
#: Seconds first tokens wait at most for the status queue to empty (:meth:`release`).
STATUS_FIRST_WAIT = 30.0
_RECHECK = 1.0


def token_secret_data(token: kube.ServiceAccountToken) -> dict[str, str]:
    """``data`` of the Secret: ``token`` and ``expirationTimestamp``, base64-encoded."""
    return {
        SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode(),
        SECRET_EXPIRATION_KEY: base64.b64encode(format_time(token.expiration).encode()).decode(),
    }


def token_annotations(
    *, issued: dt.datetime, expiration: dt.datetime, member_id: str, role: str
) -> dict[str, str]:
    """The Secret's annotations saying when its token was minted, expires, and for what grant.

    Args:
        issued: When the token was minted (our clock).
        expiration: When it expires (the TokenRequest's ``expirationTimestamp``).
        member_id: The member's id (``kube-system`` UID) it was minted on.
        role: The member ClusterRole its ServiceAccount is bound to.
    """
    return {
        ANNOTATION_TOKEN_ISSUED: format_time(issued),
        ANNOTATION_TOKEN_EXPIRES: format_time(expiration),
        ANNOTATION_TOKEN_GRANT: f"{member_id}:{role}",
    }


def adoption_due(
    secret: dict[str, Any] | None, *, member_id: str | None, role: str, fraction: float
) -> dt.datetime | None:
    """When a token Secret written by another replica (or an earlier run) must be rotated.

    A replica taking a profile over keeps its token until then instead of minting one (five
    requests on the member and a hub write per profile, ``docs/scale.md``).

    Args:
        secret: The Secret (its metadata is enough), or None if there is none.
        member_id: The member's id now; None (unknown) adopts nothing.
        role: The inventory's member ClusterRole now.
        fraction: Of the token's life after which it is rotated.

    Returns:
        ``issued + (expires - issued) * fraction`` if the Secret's annotations
        (:func:`token_annotations`) are whole and name this grant; otherwise None.
    """
    if secret is None or member_id is None:
        return None
    notes = objects.annotations_of(secret)
    if notes.get(ANNOTATION_TOKEN_GRANT) != f"{member_id}:{role}":
        return None
    issued = parse_time(notes.get(ANNOTATION_TOKEN_ISSUED))
    expires = parse_time(notes.get(ANNOTATION_TOKEN_EXPIRES))
    if issued is None or expires is None or expires <= issued:
        return None
    return issued + (expires - issued) * fraction


def token_secret(
    key: ObjectKey,
    *,
    profile_uid: str | None,
    manager: str,
    data: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The whole Secret for profile ``key`` (server-side applied by the cluster manager).

    Args:
        key: The profile (its namespace and name are the Secret's).
        profile_uid: The profile's uid, for the owner reference.
        manager: The cluster manager's name (label ``x-k8s.io/cluster-manager``).
        data: From :func:`token_secret_data`.
        annotations: From :func:`token_annotations`.
    """
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": TOKEN_SECRET_TYPE,
        "metadata": {
            "name": key.name,
            "namespace": key.namespace,
            "labels": {LABEL_CLUSTER_MANAGER: manager, LABEL_TOKEN_FOR: key.name},
            "annotations": annotations or {},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "ClusterProfile",
                    "name": key.name,
                    "uid": profile_uid,
                    "controller": True,
                }
            ],
        },
        "data": data,
    }


class TokenController:
    """Reconciles the consumer token Secret of each profile of a cluster manager.

    Args:
        manager: The cluster manager whose cache, member pool and desired profiles it reads.
        agents: Agent members' credential Secrets (their agents mint the tokens).
    """

    def __init__(self, manager: ClusterManagerRunnable, agents: AgentCredentials) -> None:
        self.manager = manager
        self.agents = agents
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

    def agent_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        """The token keys an agent credential Secret's event queues (its member's profiles)."""
        by_member, namespace = self.manager.by_member, self.agents.namespace
        return self.agents.keys(
            event, obj, lambda name: by_member.get(AgentMemberKey(namespace, name), ())
        )

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
        if len(self.manager.statuses.queue) and now - since < STATUS_FIRST_WAIT:
            if self._recheck is None:
                loop = asyncio.get_running_loop()
                self._recheck = loop.call_later(_RECHECK, self._release_again)
            return
        self._waiting_since = None
        parked, self._parked = self._parked, set()
        for key in parked:
            self.manager.token_queue.add(key)

    def _release_again(self) -> None:
        self._recheck = None
        if not self.manager.members.starting:
            self.release()

    def close(self) -> None:
        """Cancel a pending re-check of the status queue (the manager stops)."""
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None

    async def reconcile(self, key: ProfileKey) -> float | None:
        """Keep the consumer token Secret ``<inventory>/<profile>`` current.

        Runs on its own queue with fewer workers, so that status (what every consumer reads
        first) is never queued behind token minting; and a token not minted yet waits while
        members are still starting (a cold start, a dead replica's share): minting takes five
        requests per member, and on a busy fleet it made the first probes of the others fail.

        Returns:
            Seconds until the token's rotation is due, or None (also for a first token
            parked until no member is starting: :meth:`release`).

        Raises:
            KubeAPIError: Minting on the member or writing the Secret failed (retried).
        """
        m = self.manager
        target = m.status.target(key)
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
                m.token_secrets.get(str(key)),
                member_id=member.observation.member_id,
                role=role,
                fraction=m.config.rotation_fraction,
            )
            if due is not None and m.now() < due:
                return max(1.0, (due - m.now()).total_seconds())
        if m.members.starting and member.accounts.rotation_due(inv.namespace, role, 1.0) is None:
            # Parked, not requeued: thousands of keys requeued every few seconds while
            # members start were a sixth of a replica's CPU (py-spy). release() queues them.
            self._parked.add(key)
            return None
        try:
            token = await member.accounts.token_for(
                inv.namespace,
                role,
                lifetime=m.config.token_lifetime,
                fraction=m.config.rotation_fraction,
            )
        except (kube.KubeError, RuntimeError):
            if member.closed:
                # The member left this replica (moved, deregistered, shutdown) while we
                # minted: its client is closed and the key is no longer ours to serve.
                return None
            raise
        if token is None:  # the grant went while we waited: its profile's reconcile follows
            return None
        issued = member.accounts.issued_at(inv.namespace, role) or m.now()
        notes = token_annotations(
            issued=issued,
            expiration=token.expiration,
            member_id=member.observation.member_id or "",
            role=role,
        )
        await self._store_token(key, current, token, notes)
        due = member.accounts.rotation_due(inv.namespace, role, m.config.rotation_fraction)
        return max(1.0, (due - m.now()).total_seconds()) if due else None

    async def _withdraw(self, key: ProfileKey) -> None:
        """Delete the token Secret of ``key`` if one exists (its inventory has no grant)."""
        if self.manager.token_secrets.get(str(key)) is None:
            return
        await kube.delete(self.manager.hub, kube.SECRETS, key.name, namespace=key.namespace)
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
        now = self.manager.now()
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
        held = objects.annotations_of(self.manager.token_secrets.get(str(key)) or {})
        if key in self._stored or any(held.get(k) != v for k, v in notes.items()):
            # A Secret this process did not write that holds this token already (a restart
            # or a takeover finds it there) is not written again: no write per profile.
            token = kube.ServiceAccountToken(token=kept.token, expiration=kept.expiration)
            await self._store_token(key, profile, token, notes)
        return max(1.0, (kept.expiration - now).total_seconds())

    def forget(self, key: ProfileKey) -> None:
        """Forget what was written for ``key`` (its profile was deleted)."""
        self._stored.pop(key, None)

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
        m = self.manager
        existing = m.token_secrets.get(str(key))
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
            manager=m.config.name,
            data=data,
            annotations=annotations,
        )
        written = await kube.apply(
            m.hub, kube.SECRETS, secret, field_manager=FIELD_MANAGER_CLUSTER_MANAGER
        )
        self._stored[key] = (digest, str(objects.meta(written).get("resourceVersion")))
        _log.info(
            "stored member token",
            extra={"object": str(key), "expires": format_time(token.expiration)},
        )
