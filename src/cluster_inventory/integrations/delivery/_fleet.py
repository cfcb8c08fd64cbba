"""Delivery to a fleet: profiles selected on the hub, members reached by exec, in parallel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.views import ProfileView
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialsError,
    ProviderConfig,
    load_provider_file,
    resolve_access,
)
from cluster_inventory.integrations.delivery._applyset import FIELD_MANAGER, ApplySet
from cluster_inventory.integrations.delivery._manifests import Manifest
from cluster_inventory.integrations.delivery._member import (
    PER_MEMBER_REQUESTS,
    ApplyOptions,
    MemberApply,
    member_apply,
)
from cluster_inventory.integrations.delivery._member_pass import apply_member
from cluster_inventory.integrations.delivery._results import (
    DeliveryError,
    ObjectResult,
    api_message,
)
from cluster_inventory.kube.informer import object_key
from cluster_inventory.runtime.cluster import ConnectionPool, SharedConnection
from cluster_inventory.runtime.decisions import read_decisions

_IN_FLIGHT = 64


def _server(profile: Mapping[str, Any]) -> str:
    return ProfileView.of(profile).server


class _SharedClients:
    """The member connections of one :func:`deliver` run, from the runtime's pool.

    Profiles whose resolved access is equal -- same server, CA, TLS server name, proxy and
    exec plugin with the same cluster config (:attr:`ClusterAccess.cache_key
    <cluster_inventory.credentials.ClusterAccess>`, the key that already shares one
    credential, KEP-5339) -- reach the same API server as the same identity. They share one
    client of the :class:`~cluster_inventory.runtime.cluster.ConnectionPool` (the one a
    fleet manager engages clusters through): its keep-alive connections (instead of new TLS
    handshakes per profile), the credential and the kinds resolved on that server. Each
    profile still gets its own apply pass and result rows; a profile's deadline cancels only
    its own wait.
    """

    def __init__(self, providers: ProviderConfig, cache: CredentialCache) -> None:
        self._providers = providers
        self._pool = ConnectionPool(cache)
        self._held: list[SharedConnection] = []
        self._kinds: dict[str, dict[str, kube.Resource]] = {}

    async def get(
        self, profile: Mapping[str, Any]
    ) -> tuple[kube.ApiClient, dict[str, kube.Resource]]:
        """The client for ``profile``'s member and the kinds resolved on its server.

        Raises:
            CredentialsError: No usable access provider, or the plugin failed.
            KubeConfigError: The CA or client certificate does not load.
        """
        access = resolve_access(profile, self._providers)
        connection = await self._pool.acquire(access)
        self._held.append(connection)
        return connection.client, self._kinds.setdefault(connection.key, {})

    async def close(self) -> None:
        """Let go of every connection; the pool closes each client with its last user."""
        for connection in self._held:
            await self._pool.release(connection)
        self._held.clear()


async def _deliver_one(
    profile: Mapping[str, Any],
    manifests: Sequence[Manifest],
    clients: _SharedClients,
    timeout: float,
    options: ApplyOptions,
    *,
    applyset: ApplySet | None,
    parallel: int,
) -> list[ObjectResult]:
    cluster = object_key(profile)
    server = _server(profile)
    member: MemberApply | None = None

    def rows_failing_with(message: str) -> list[ObjectResult]:
        done = member or member_apply(None, manifests, cluster=cluster, server=server)
        return done.failing(manifests, message)

    try:
        async with asyncio.timeout(timeout):
            client, kinds = await clients.get(profile)
            member = member_apply(
                client,
                manifests,
                cluster=cluster,
                server=server,
                options=options,
                parallel=parallel,
                kinds=kinds,
            )
            await apply_member(member, manifests, applyset)
            return member.results(manifests)
    except TimeoutError:
        return rows_failing_with(f"timed out after {timeout:g} s")
    except (CredentialsError, kube.KubeError, DeliveryError) as exc:
        message = api_message(exc) if isinstance(exc, kube.KubeAPIError) else str(exc)
        return rows_failing_with(message)


async def deliver(
    profiles: Sequence[Mapping[str, Any]],
    manifests: Sequence[Manifest],
    providers: ProviderConfig | str | Path,
    *,
    concurrency: int = 32,
    timeout: float = 60.0,
    cache: CredentialCache | None = None,
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
    force_conflicts: bool = False,
    default_namespace: str = "default",
    applyset: ApplySet | None = None,
    skip_unchanged: bool = True,
) -> list[ObjectResult]:
    """Apply ``manifests`` to the member of every profile; never raises for one member.

    Args:
        profiles: ClusterProfiles (decoded dicts) of the target members.
        manifests: What to apply.
        providers: The consumer's provider file (KEP-5339), loaded or as a path.
        concurrency: Members processed at once.
        timeout: Seconds each member gets (connect, apply, prune); its unfinished objects
            fail with "timed out" and the others are not held.
        cache: Credential cache (default: a new one for this run).
        field_manager: Server-side apply field manager.
        dry_run: Server-side dry run.
        force_conflicts: Take over fields other managers own.
        default_namespace: Namespace of namespaced objects that name none.
        applyset: Prune what left the set (KEP-3659).
        skip_unchanged: Send no apply for an object it could not change
            (:func:`apply_is_noop`); False sends every apply, as kubectl does.

    Returns:
        Every member's results, members in the order of ``profiles``.

    Raises:
        ValueError: ``concurrency`` or ``timeout`` is not positive.
    """
    if concurrency < 1 or timeout <= 0:
        raise ValueError("concurrency must be >= 1 and timeout > 0")
    cache = cache or CredentialCache()
    if not isinstance(providers, ProviderConfig):  # read the file once, not once per member
        try:
            providers = load_provider_file(Path(providers))
        except CredentialsError as exc:
            return [
                row
                for p in profiles
                for row in member_apply(
                    None, manifests, cluster=object_key(p), server=_server(p)
                ).failing(manifests, str(exc))
            ]
    clients = _SharedClients(providers, cache)
    gate = asyncio.Semaphore(concurrency)
    options = ApplyOptions(
        field_manager=field_manager,
        dry_run=dry_run,
        force_conflicts=force_conflicts,
        default_namespace=default_namespace,
        skip_unchanged=skip_unchanged,
    )
    parallel = max(
        2, min(PER_MEMBER_REQUESTS, _IN_FLIGHT // max(1, min(concurrency, len(profiles))))
    )

    async def one(profile: Mapping[str, Any]) -> list[ObjectResult]:
        async with gate:
            return await _deliver_one(
                profile, manifests, clients, timeout, options, applyset=applyset, parallel=parallel
            )

    try:
        per_member = await asyncio.gather(*(one(p) for p in profiles))
    finally:
        await clients.close()
    return [row for rows in per_member for row in rows]


async def select_profiles(
    hub: kube.ApiClient,
    namespace: str,
    *,
    profile: str | None = None,
    selector: str | None = None,
    placement: str | None = None,
) -> list[dict[str, Any]]:
    """The target ClusterProfiles: one by name, by label selector, or a placement's clusters.

    Exactly one of ``profile``, ``selector`` and ``placement`` is given. A placement is read
    as a consumer reads a PlacementDecision: every slice of the decision-key ``placement``
    in ``namespace``, grouped by revision
    (:func:`~cluster_inventory.runtime.decisions.read_decisions`).

    Returns:
        Profiles sorted by ``namespace/name``.

    Raises:
        DeliveryError: No such profile, no decision with that key, or the decision's slices
            are being rewritten.
        ValueError: Not exactly one way of selecting was given.
        KubeError: The hub refused or could not be reached.
    """
    if sum(x is not None for x in (profile, selector, placement)) != 1:
        raise ValueError("select with exactly one of profile, selector or placement")
    if profile is not None:
        try:
            return [await kube.get(hub, kube.CLUSTER_PROFILES, profile, namespace)]
        except kube.NotFoundError:
            raise DeliveryError(f"ClusterProfile {namespace}/{profile} not found") from None
    if selector is not None:
        listed = await kube.list_objects(
            hub, kube.CLUSTER_PROFILES, namespace, label_selector=selector
        )
        return sorted(listed.get("items") or (), key=object_key)
    assert placement is not None
    decision = await read_decisions(hub, namespace, placement)
    if not decision.found:
        raise DeliveryError(f"no PlacementDecision with decision-key {placement} in {namespace}")
    if not decision.complete:
        raise DeliveryError(
            f"the PlacementDecision slices of {placement} in {namespace} are being rewritten "
            f"(revision {decision.revision} incomplete); try again"
        )
    wanted = set(decision.clusters)
    found: dict[str, dict[str, Any]] = {}
    for ns in sorted({key.partition("/")[0] for key in wanted}):
        listed = await kube.list_objects(hub, kube.CLUSTER_PROFILES, ns)
        found.update(
            {object_key(p): p for p in listed.get("items") or () if object_key(p) in wanted}
        )
    missing = sorted(wanted - set(found))
    if missing:
        raise DeliveryError(
            f"PlacementDecision {placement} names ClusterProfiles that do not exist: "
            + ", ".join(missing)
        )
    return [found[key] for key in sorted(found)]


def results_json(results: Iterable[ObjectResult]) -> str:
    """``-o json``: a list of result objects."""
    return json.dumps([r.to_dict() for r in results], indent=2)
