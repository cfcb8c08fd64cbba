"""The registration Secrets source: labelled Secrets in the manager's hub namespace, watched.

Each Secret is parsed once per version as it arrives (:func:`parse_registration_secret`,
pure) and cached without its ``data``: the kubeconfig is most of it, and every replica caches
every registration (``docs/scale.md``). A Secret edited into an invalid one keeps its last
valid registration, so a bad edit never removes its member's profiles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_REGISTRATION
from cluster_inventory.manager.rules.registration import (
    Registration,
    RegistrationError,
    parse_registration_secret,
)
from cluster_inventory.manager.sources.source import Snapshot

__all__ = ["SecretRegistrationSource"]


class SecretRegistrationSource:
    """Registrations from labelled Secrets in one hub namespace (watched, not polled).

    Args:
        hub: Hub client.
        namespace: The manager's namespace.
    """

    def __init__(self, hub: kube.ApiClient, namespace: str) -> None:
        self.hub = hub
        self.namespace = namespace
        # From the hub client's shared cache (controller-runtime's mgr.GetCache()); its own
        # transform parses, so it is this source's informer alone.
        self.informer = kube.InformerCache.for_client(hub).informer(
            kube.SECRETS,
            namespaces=[namespace],
            label_selector=f"{LABEL_REGISTRATION}=true",
            name="registration Secrets",
            transform=self._parse,
        )
        #: uid -> (resourceVersion, parsed).
        self._cache: dict[str, tuple[str, Registration | RegistrationError]] = {}
        self._last_good: dict[str, Registration] = {}

    def _parse(self, secret: dict[str, Any]) -> dict[str, Any]:
        """Parse a Secret as it arrives (once per version); keep it without ``data``."""
        # The kubeconfig is most of it; every replica caches every registration (scale.md).
        meta = objects.meta(secret)
        uid, rv = str(meta.get("uid")), str(meta.get("resourceVersion"))
        cached = self._cache.get(uid)
        if cached is None or cached[0] != rv:
            parsed: Registration | RegistrationError
            try:
                parsed = parse_registration_secret(secret)
            except RegistrationError as exc:
                parsed = exc
            self._cache[uid] = (rv, parsed)
        slim = {key: value for key, value in secret.items() if key != "data"}
        slim["metadata"] = {key: value for key, value in meta.items() if key != "managedFields"}
        return slim

    def start(self, on_change: Callable[[], None]) -> None:
        """Start the informer; each event, and each read failing or recovering, is a change."""
        self.informer.add_handler(lambda *_: on_change())
        self.informer.add_health_handler(on_change)
        self.informer.start()

    async def wait_synced(self) -> None:
        """Wait for the first LIST.

        Raises:
            SourceUnavailableError: The namespace does not exist (a typo would otherwise read
                as "no members"), or the LIST was refused (401, 403).
        """
        where = f"registration Secrets in namespace {self.namespace}"
        try:
            await kube.get(self.hub, kube.NAMESPACES, self.namespace)
        except kube.NotFoundError:
            raise kube.SourceUnavailableError(where, "the namespace does not exist") from None
        except kube.ForbiddenError:
            pass  # may not read namespaces: the LIST below still tells a refusal
        try:
            await self.informer.wait_synced()
        except kube.KubeAPIError as exc:
            raise kube.SourceUnavailableError(where, str(exc)) from None

    def failures(self) -> list[str]:
        """The informer's last read failure, if reading fails now."""
        failure = self.informer.failure
        return [] if failure is None else [f"registration Secrets in {self.namespace}: {failure}"]

    def snapshot(self) -> Snapshot:
        """Every Secret's registration (parsed once per version as it arrived).

        A Secret that turns invalid keeps its last valid registration in the snapshot (and is
        also reported as invalid), so a bad edit never removes the member's profiles. An
        agent-mode Secret is a registration reaching an :class:`.member_keys.AgentMemberKey`.
        """
        good: dict[str, Registration] = {}
        bad: list[tuple[dict[str, Any], RegistrationError]] = []
        seen: set[str] = set()
        for secret in self.informer.items():
            meta = objects.meta(secret)
            uid, rv = str(meta.get("uid")), str(meta.get("resourceVersion"))
            seen.add(uid)
            cached = self._cache.get(uid)
            if cached is None or cached[0] != rv:  # not seen by _parse: never, but be whole
                self._parse(secret)
                cached = self._cache[uid]
            if isinstance(cached[1], RegistrationError):
                bad.append((secret, cached[1]))
                # A broken edit must not delete what the last good version created.
                last = self._last_good.get(uid)
                if last is not None:
                    good[last.name] = last
            else:
                good[cached[1].name] = cached[1]
                self._last_good[uid] = cached[1]
        for uid in [u for u in self._cache if u not in seen]:
            del self._cache[uid]
            self._last_good.pop(uid, None)
        return good, bad

    async def stop(self) -> None:
        """Stop the informer."""
        await self.informer.stop()
