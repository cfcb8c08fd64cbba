"""--inventory-namespaces-only: the fixed inventories are served, labelled namespaces are not.

The chart's ``secretAccess: namespaces`` grants the manager Secrets only in the listed
inventories, so in this mode it must keep token Secrets there (watched per namespace) and
must not create profiles where it could not store their tokens.
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.testing import Fleet
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually


async def _token_stored(hub: kube.ApiClient, ns: str, name: str) -> bool:
    try:
        secret = await kube.get(hub, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return False
    return "token" in (secret.get("data") or {})


async def test_only_the_fixed_inventories_get_profiles_and_tokens(
    fleet: Fleet, test_namespace: str
) -> None:
    fixed, labelled = f"{test_namespace}-fixed"[:63], f"{test_namespace}-labelled"[:63]
    async with await fleet.hub.client() as admin:
        for ns, labels in ((fixed, {}), (labelled, {LABEL_CLUSTER_SET: "prod"})):
            await kube.apply(
                admin,
                kube.NAMESPACES,
                {"metadata": {"name": ns, "labels": labels}},
                field_manager="test",
            )
        try:
            async with running_manager(
                fleet,
                test_namespace,
                inventory_namespaces={fixed: ("prod",)},
                inventory_namespaces_only=True,
            ) as h:
                assert [i.namespace for i in h.manager.hub.token_secrets.informers] == [fixed]
                await h.register("alpha", h.member(0), ["prod"])
                await eventually(
                    lambda: _token_stored(admin, fixed, "alpha"), what="alpha's token Secret"
                )
                assert await h.profile_names(fixed) == {"alpha"}
                assert await h.profile_names(labelled) == set()
        finally:
            for ns in (fixed, labelled):
                await kube.delete(admin, kube.NAMESPACES, ns)
