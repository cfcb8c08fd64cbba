"""The consumers' credential of an agent member: a ServiceAccount token, minted from inside.

The hub cannot reach an agent member, so it cannot mint its consumers' token as it does for a
probed member (``docs/manager.md``). The agent does (``docs/agent.md``, "The consumers'
credential"): it asks its member's TokenRequest API for a token of one ServiceAccount (what
that account may do on the member is the member admin's choice), and writes it to its own
credential Secret on the hub, ``NS/cluster-inventory-agent-NAME-credential``, which
``manager accept`` created and which its identity may only ``get``, ``update`` and ``patch``.
The cluster manager copies it into each ``<inventory>/<profile>`` Secret the upstream
``secretreader`` plugin reads.

The token is minted again when 20-25% of its life remains, by the rule the agent's
certificate rotates by (:func:`~.identity.rotation_time`), and at start when the one on the
hub is missing, expired or for another account. The hub is written only then: one write per
member per rotation. :func:`credential_secret` and :func:`stored_rotation` are pure; the
token is never logged or put in an exception.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.identity import rotation_time
from cluster_inventory.api import format_time, objects
from cluster_inventory.api.agents import agent_credential_name, check_member_name
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_EXPIRES,
    ANNOTATION_TOKEN_GRANT,
    ANNOTATION_TOKEN_ISSUED,
    FIELD_MANAGER_AGENT,
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
)
from cluster_inventory.api.views import parse_time

__all__ = [
    "DEFAULT_CONSUMER_TOKEN_LIFETIME",
    "ConsumerCredential",
    "credential_secret",
    "parse_service_account",
    "stored_rotation",
]

#: ``expirationSeconds`` of a consumer token by default (the manager's default lifetime).
DEFAULT_CONSUMER_TOKEN_LIFETIME = 3600
#: Seconds between tries after a failure: the first, doubling up to the last.
_RETRY = (1.0, 60.0)
_log = logging.getLogger("cluster_inventory.agent")


def parse_service_account(
    text: str, *, source: str = "--consumer-service-account"
) -> tuple[str, str]:
    """``NAMESPACE/NAME`` of a member ServiceAccount, as (namespace, name).

    Raises:
        AgentNameError: A part is missing or is not a DNS-1123 label (a ``ValueError``
            naming ``source``).
    """
    namespace, _, name = text.partition("/")
    check_member_name(namespace, source=source, field="namespace")
    check_member_name(name, source=source, field="name")
    return namespace, name


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def credential_secret(
    name: str,
    namespace: str,
    token: kube.ServiceAccountToken,
    *,
    issued: dt.datetime,
    grant: str,
) -> dict[str, Any]:
    """What the agent of member ``name`` applies to its credential Secret on the hub.

    Only what the agent owns (server-side apply, field manager ``cluster-inventory-agent``):
    ``data.token`` and ``data.expirationTimestamp`` (the ``secretreader`` Secret's keys), and
    annotations saying when it was minted, when it expires and for which account.

    Args:
        name: The member name.
        namespace: The hub namespace of its registration.
        token: The minted token.
        issued: When it was minted (the agent's clock).
        grant: The member ServiceAccount it authenticates as, ``NAMESPACE/NAME``.
    """
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": agent_credential_name(name),
            "namespace": namespace,
            "annotations": {
                ANNOTATION_TOKEN_ISSUED: format_time(issued),
                ANNOTATION_TOKEN_EXPIRES: format_time(token.expiration),
                ANNOTATION_TOKEN_GRANT: grant,
            },
        },
        "data": {
            SECRET_TOKEN_KEY: _b64(token.token),
            SECRET_EXPIRATION_KEY: _b64(format_time(token.expiration)),
        },
    }


def stored_rotation(
    secret: Mapping[str, Any] | None, *, grant: str, now: dt.datetime
) -> dt.datetime | None:
    """When the token in the hub credential Secret must be minted again, if it can be kept.

    Args:
        secret: The credential Secret as read from the hub (None: none).
        grant: The account the agent mints for now (``NAMESPACE/NAME``).
        now: The agent's clock.

    Returns:
        :func:`~.identity.rotation_time` of the stored token; None when there is none to
        keep: no token, annotations missing or unreadable, another account's, or expired.
    """
    if secret is None:
        return None
    notes = objects.annotations_of(secret)
    issued = parse_time(notes.get(ANNOTATION_TOKEN_ISSUED))
    expires = parse_time(notes.get(ANNOTATION_TOKEN_EXPIRES))
    try:
        token = base64.b64decode(str((secret.get("data") or {}).get(SECRET_TOKEN_KEY) or ""))
    except (binascii.Error, ValueError):
        return None
    if not token or notes.get(ANNOTATION_TOKEN_GRANT) != grant:
        return None
    if issued is None or expires is None or expires <= max(issued, now):
        return None
    return rotation_time(issued, expires, token)


class ConsumerCredential:
    """Keeps member ``name``'s consumer token fresh in its hub credential Secret.

    Args:
        hub: The agent's hub client (its identity may get and patch the credential Secret).
        member: The agent's member client (may ``create`` ``serviceaccounts/token`` of the
            consumer account).
        name: The member name.
        namespace: The hub namespace of its registration.
        service_account: The member ServiceAccount, (namespace, name).
        lifetime: ``expirationSeconds`` asked for (the API server's minimum is 600; it may
            shorten it, the expiry it answers is the one kept).
        now: Wall clock.
        sleep: Injectable ``asyncio.sleep``.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        member: kube.ApiClient,
        *,
        name: str,
        namespace: str,
        service_account: tuple[str, str],
        lifetime: int = DEFAULT_CONSUMER_TOKEN_LIFETIME,
        now: Callable[[], dt.datetime] = utcnow,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.hub = hub
        self.member = member
        self.name = name
        self.namespace = namespace
        self.service_account = service_account
        self.grant = "/".join(service_account)
        self.lifetime = lifetime
        self._now = now
        self._sleep = sleep
        #: When the token on the hub is due for rotation (None: not known yet, read it).
        self.due: dt.datetime | None = None
        #: Tokens minted and written by this process.
        self.minted = 0

    @property
    def secret_name(self) -> str:
        """``NS/cluster-inventory-agent-NAME-credential``, for logs."""
        return f"{self.namespace}/{agent_credential_name(self.name)}"

    async def ensure(self) -> dt.datetime:
        """Mint and write a token if the one on the hub is due (or missing); say when next.

        Returns:
            When the token now on the hub is due for rotation.

        Raises:
            KubeAPIError: Reading or writing the hub Secret, or minting on the member, failed
                (``NotFoundError`` for a missing account or Secret; ``ForbiddenError`` when
                the member is not accepted with a credential Secret, or the agent may not
                mint for the account).
        """
        if self.due is None:
            stored = await kube.get(
                self.hub, kube.SECRETS, agent_credential_name(self.name), self.namespace
            )
            self.due = stored_rotation(stored, grant=self.grant, now=self._now())
        if self.due is not None and self._now() < self.due:
            return self.due
        namespace, account = self.service_account
        token = await kube.request_service_account_token(
            self.member, namespace, account, expiration_seconds=self.lifetime
        )
        issued = self._now()
        body = credential_secret(self.name, self.namespace, token, issued=issued, grant=self.grant)
        await kube.apply(self.hub, kube.SECRETS, body, field_manager=FIELD_MANAGER_AGENT)
        self.due = rotation_time(issued, token.expiration, token.token.encode())
        self.minted += 1
        _log.info(
            "consumer token of %s written to %s, valid until %s",
            self.grant,
            self.secret_name,
            format_time(token.expiration),
            extra={"object": self.name},
        )
        return self.due

    async def run(self) -> None:
        """Keep the token fresh for ever (a task; cancel it to stop).

        Sleeps until the rotation is due (a timer, not a poll). A failure is retried after
        1 s, doubling to 60 s, with one warning when it starts failing and one line when it
        recovers; a token already on the hub stays there meanwhile.
        """
        throttle = kube.Throttle(
            f"keep the consumer token of {self.grant} in {self.secret_name}",
            logger=_log,
            backoff=kube.Backoff(first=_RETRY[0], cap=_RETRY[1]),
            extra={"object": self.name},
            sleep=self._sleep,
        )
        while True:
            try:
                due = await self.ensure()
            except kube.KubeError as exc:
                await throttle.pause(exc)
                continue
            throttle.succeeded()
            await self._sleep(max((due - self._now()).total_seconds(), 0.0))
