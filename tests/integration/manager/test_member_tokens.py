"""Consumer tokens: minted on the member, stored on the hub, rotated, usable, fenced by RBAC."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE, ANNOTATION_TOKEN_GRANT
from cluster_inventory.credentials import CredentialCache, CredentialMetrics, connect
from cluster_inventory.manager import ProfileKey, service_account_name
from cluster_inventory.testing import Fleet
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.manager import Harness, running_manager
from tests.support.waiting import eventually


async def _token(h: Harness, ns: str, name: str) -> tuple[str, str] | None:
    try:
        secret = await kube.get(h.hub_client, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return None
    data = secret.get("data") or {}
    if "token" not in data:
        return None
    return (
        base64.b64decode(data["token"]).decode(),
        base64.b64decode(data["expirationTimestamp"]).decode(),
    )


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


async def test_token_secret_is_usable_by_a_consumer_with_the_plugin(
    harness: Harness, tmp_path
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    _, expiry = await eventually(lambda: _token(h, ns, "alpha"), what="token Secret")
    lifetime = dt.datetime.fromisoformat(expiry.replace("Z", "+00:00")) - dt.datetime.now(dt.UTC)
    assert dt.timedelta(minutes=50) < lifetime <= dt.timedelta(hours=1, minutes=1)
    secret = await kube.get(h.hub_client, kube.SECRETS, "alpha", namespace=ns)
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "ClusterProfile"

    # A consumer in this inventory, with the provider file and our plugin, reaches the member
    # with the manager's token and gets exactly the default role (view) there.
    providers = provider_file(
        tmp_path / "providers.json",
        str(PLUGIN),
        ["--namespace", ns],
        {"KUBECONFIG": str(h.hub.kubeconfig_path)},
    )
    profile = await h.profile(ns, "alpha")
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
    async with await connect(profile, providers, cache=cache) as client:
        listed = await kube.list_objects(client, kube.NAMESPACES)
        assert "kube-system" in {i["metadata"]["name"] for i in listed["items"]}
        with pytest.raises(kube.ForbiddenError):
            await kube.create(
                client, kube.CONFIG_MAPS, {"metadata": {"name": "x", "namespace": "default"}}
            )
    assert cache.runs == 1
    sa = service_account_name(ns, h.manager.config.name)
    async with await h.member(0).client() as member:
        account = await kube.get(member, kube.SERVICE_ACCOUNTS, sa, namespace=h.namespace)
    assert account["metadata"]["name"] == sa


async def test_token_rotates_at_eighty_percent_of_its_lifetime(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    first, _ = await eventually(lambda: _token(h, ns, "alpha"), what="first token")
    h.clock.offset = dt.timedelta(minutes=47)  # 78%: not yet
    await h.manager.tokens.reconcile(ProfileKey(ns, "alpha"))
    assert (await _token(h, ns, "alpha"))[0] == first
    h.clock.offset = dt.timedelta(minutes=49)  # 82%: rotate
    await h.manager.tokens.reconcile(ProfileKey(ns, "alpha"))

    async def rotated():
        current = await _token(h, ns, "alpha")
        return current if current and current[0] != first else None

    await eventually(rotated, what="rotated token")


async def test_a_restarted_manager_keeps_the_stored_token_until_its_rotation_is_due(
    fleet: Fleet, test_namespace: str
) -> None:
    """A replica taking a profile over (here: the manager restarted) keeps the token the
    Secret holds, minted for this member and role, instead of minting one: no member request
    and no hub write per profile (docs/scale.md); it rotates it when it is due."""
    async with running_manager(fleet, test_namespace) as h:
        ns = await h.inventory("prod", "prod")
        h.created_namespaces.remove(ns)  # outlives this manager: the next one takes over
        await h.register("alpha", h.member(0), ["prod"])
        first, _ = await eventually(lambda: _token(h, ns, "alpha"), what="first token")
        stored = await kube.get(h.hub_client, kube.SECRETS, "alpha", namespace=ns)
    assert stored["metadata"]["annotations"][ANNOTATION_TOKEN_GRANT].endswith(":view")
    key = ProfileKey(ns, "alpha")
    try:
        async with running_manager(fleet, test_namespace) as h2:

            def joined() -> bool:
                target = h2.manager.targets.get(key)
                member = target.member if target else None
                joined = member is not None and member.observation.joined.status == "True"
                return joined and not h2.manager.members.starting

            await eventually(joined, what="the restarted manager's member connection")
            due = await h2.manager.tokens.reconcile(key)
            assert due is not None and due.requeue_after is not None
            assert 40 * 60 < due.requeue_after <= 48 * 60
            secret = await kube.get(h2.hub_client, kube.SECRETS, "alpha", namespace=ns)
            assert secret["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
            h2.clock.offset = dt.timedelta(minutes=49)  # 82% of the adopted token's life
            await h2.manager.tokens.reconcile(key)
            rotated = await _token(h2, ns, "alpha")
            assert rotated is not None
            assert _digest(rotated[0]) != _digest(first)  # never a token in a failure message
    finally:
        async with await fleet.hub.client() as hub:
            await kube.delete(hub, kube.NAMESPACES, ns)


async def test_inventory_role_annotation_picks_a_role_its_set_allows(
    fleet: Fleet, test_namespace: str
) -> None:
    async with running_manager(fleet, test_namespace, member_roles={"ops": ("view", "admin")}) as h:
        ns = await h.inventory("ops", "ops", annotations={ANNOTATION_MEMBER_ROLE: "admin"})
        await h.register("alpha", h.member(0), ["ops"])
        await eventually(lambda: _token(h, ns, "alpha"), what="token")
        sa = service_account_name(ns, h.manager.config.name)
        async with await h.member(0).client() as member:
            listed = await kube.list_objects(member, kube.CLUSTER_ROLE_BINDINGS)
        roles = {
            b["roleRef"]["name"]
            for b in listed["items"]
            if b["metadata"]["name"].startswith(f"{sa}:")
        }
        assert roles == {"admin"}


async def test_inventory_a_service_account_cannot_read_inventory_b_tokens(harness: Harness) -> None:
    h = harness
    a = await h.inventory("team-a", "prod")
    b = await h.inventory("team-b", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _token(h, a, "alpha"), what="token in a")
    await eventually(lambda: _token(h, b, "alpha"), what="token in b")
    hub = h.hub_client
    await kube.create(
        hub, kube.SERVICE_ACCOUNTS, {"metadata": {"name": "consumer", "namespace": a}}
    )
    await kube.create(
        hub,
        kube.ROLES,
        {
            "metadata": {"name": "read-tokens", "namespace": a},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        },
    )
    await kube.create(
        hub,
        kube.ROLE_BINDINGS,
        {
            "metadata": {"name": "read-tokens", "namespace": a},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "read-tokens",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "consumer", "namespace": a}],
        },
    )
    minted = await kube.request_service_account_token(hub, a, "consumer", expiration_seconds=600)
    conn = kube.ClusterConnection(server=h.hub.server, ca_data=h.hub.ca_pem, token=minted.token)
    async with await kube.new_client(conn) as consumer:
        own = await kube.get(consumer, kube.SECRETS, "alpha", namespace=a)
        assert own["data"]["token"]
        with pytest.raises(kube.ForbiddenError) as info:
            await kube.get(consumer, kube.SECRETS, "alpha", namespace=b)
    assert minted.token not in str(info.value)


async def test_token_never_appears_in_logs(harness: Harness, caplog) -> None:
    h = harness
    caplog.set_level("DEBUG", logger="cluster_inventory")
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    token, _ = await eventually(lambda: _token(h, ns, "alpha"), what="token")

    def logged() -> str | None:
        # The Secret can be read before the manager's task, resumed after its write, logs it.
        text = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
        return text if "stored member token" in text else None

    text = await eventually(logged, what="the 'stored member token' log record")
    assert token not in text
