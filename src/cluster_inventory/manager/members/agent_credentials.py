"""Agent members' consumer credential: the token their agent keeps, copied to each inventory.

The hub never dials an agent member, so it cannot mint its consumers' token; the member's
agent does, and writes it to its credential Secret ``NS/cluster-inventory-agent-NAME-credential``
(``docs/agent.md``). The cluster manager copies that token into each ``<inventory>/<profile>``
token Secret of the member, the same Secret it writes for a probed member (so the upstream
``secretreader`` plugin reads both alike):

- the hub cache holds the credential Secrets' metadata only (as it does the token Secrets);
  :class:`AgentCredentials` reads a Secret's value with one GET when its resourceVersion
  changed, shared by all inventories of the member, never on every reconcile;
- a change of a credential Secret queues the token keys of the member's profiles
  (:meth:`AgentCredentials.keys`); the token controller
  (:mod:`~cluster_inventory.manager.controllers.token_controller`) writes a profile's Secret
  only when the token changed;
- an empty credential (no agent keeps one, or not yet) writes nothing; an expired one writes
  nothing either (the Secret there stays) and says so once in the log, without the token.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import format_time, objects
from cluster_inventory.api.agents import agent_credential_name
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_GRANT,
    ANNOTATION_TOKEN_ISSUED,
    LABEL_AGENT,
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
)
from cluster_inventory.api.views import parse_time
from cluster_inventory.kube.informer import DELETED, strip_managed_fields
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.inventory import ProfileKey

__all__ = ["AgentCredentials", "AgentToken", "read_agent_token"]

_log = logging.getLogger("cluster_inventory.manager")


@dataclass(frozen=True, kw_only=True)
class AgentToken:
    """The consumer token an agent keeps on the hub; ``repr`` leaves the token out.

    Attributes:
        token: The bearer token (a member ServiceAccount's).
        expiration: When it expires (``data.expirationTimestamp``).
        issued: When the agent minted it (its annotation; the agent's clock), or None.
        grant: The member ServiceAccount it authenticates as (``NAMESPACE/NAME``), or "".
    """

    token: str = field(repr=False)
    expiration: dt.datetime
    issued: dt.datetime | None
    grant: str


def read_agent_token(secret: Mapping[str, Any]) -> AgentToken | None:
    """The token of an agent's credential Secret, or None if it holds none (yet).

    None too when ``expirationTimestamp`` is missing or not a time, or a value is not
    base64: the manager copies nothing it cannot date.
    """
    data = secret.get("data") or {}
    try:
        token = base64.b64decode(str(data.get(SECRET_TOKEN_KEY) or "")).decode()
        expires = base64.b64decode(str(data.get(SECRET_EXPIRATION_KEY) or "")).decode()
    except (binascii.Error, ValueError):  # UnicodeDecodeError is one
        return None
    expiration = parse_time(expires)
    if not token or expiration is None:
        return None
    notes = objects.annotations_of(secret)
    return AgentToken(
        token=token,
        expiration=expiration,
        issued=parse_time(notes.get(ANNOTATION_TOKEN_ISSUED)),
        grant=str(notes.get(ANNOTATION_TOKEN_GRANT) or ""),
    )


class AgentCredentials:
    """The agent members' credential Secrets: metadata from the shared cache, values by GET.

    Args:
        hub: The hub client (its :class:`~cluster_inventory.kube.InformerCache` is used).
        config: The manager's settings (``namespace``: where ``manager accept`` writes).
    """

    def __init__(self, hub: kube.ApiClient, config: ManagerConfig) -> None:
        self.hub = hub
        self.namespace = config.namespace
        self.secrets = kube.InformerCache.for_client(hub).informer(
            kube.SECRETS,
            namespaces=[config.namespace],
            label_selector=LABEL_AGENT,
            name="hub agent credential Secrets",
            metadata_only=True,  # no token in every replica's cache
            transform=strip_managed_fields,
        )
        #: Member name -> (resourceVersion read, its token or None).
        self._read: dict[str, tuple[str, AgentToken | None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: (member, resourceVersion) whose expired token was reported.
        self._expired: set[tuple[str, str]] = set()
        self.secrets.add_handler(self._on_secret)

    def member_of(self, secret: Mapping[str, Any]) -> str | None:
        """The member whose credential Secret ``secret`` is, or None for another Secret."""
        member = objects.labels_of(secret).get(LABEL_AGENT)
        name = objects.meta(secret).get("name")
        return member if member and name == agent_credential_name(member) else None

    def _on_secret(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        member = self.member_of(obj)
        if member is not None and event == DELETED:
            self._read.pop(member, None)

    def keys(
        self,
        event: str,
        obj: dict[str, Any],
        profiles_of: Callable[[str], Iterable[ProfileKey]],
    ) -> list[ProfileKey]:
        """The token keys a credential Secret's event queues: its member's profiles."""
        member = self.member_of(obj)
        return [] if member is None else list(profiles_of(member))

    async def token(self, member: str) -> tuple[str, AgentToken | None] | None:
        """(resourceVersion, token) of ``member``'s credential Secret; None if there is none.

        The value is read with one GET when the cached resourceVersion is not the one read
        last (concurrent callers share it).

        Raises:
            KubeAPIError: The GET failed (retried by the caller's queue).
        """
        cached = self.secrets.get(f"{self.namespace}/{agent_credential_name(member)}")
        if cached is None:
            return None
        version = str(objects.meta(cached).get("resourceVersion"))
        async with self._locks.setdefault(member, asyncio.Lock()):
            known = self._read.get(member)
            if known is not None and known[0] == version:
                return known
            try:
                secret = await kube.get(
                    self.hub, kube.SECRETS, agent_credential_name(member), self.namespace
                )
            except kube.NotFoundError:
                return None
            version = str(objects.meta(secret).get("resourceVersion"))
            self._read[member] = (version, read_agent_token(secret))
            return self._read[member]

    def report_expired(self, member: str, version: str, expiration: dt.datetime) -> None:
        """Log once per Secret version that ``member``'s agent keeps an expired token."""
        if (member, version) in self._expired:
            return
        self._expired.add((member, version))
        _log.warning(
            "the consumer token agent member %s keeps in %s/%s expired at %s; its profiles' "
            "token Secrets are left as they are until its agent writes a new one",
            member,
            self.namespace,
            agent_credential_name(member),
            format_time(expiration),
            extra={"object": member},
        )
