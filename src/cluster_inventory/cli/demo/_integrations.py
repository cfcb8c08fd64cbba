"""Step 8: Argo CD cluster Secrets and MultiKueueClusters follow an inventory's profiles."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_PROFILE,
    FIELD_MANAGER_DEMO,
    LABEL_ARGOCD_SECRET_TYPE,
)
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo._plan import INVENTORIES, DemoRun, poll, register_one


async def consumers_served(
    demo: DemoRun, hub: kube.ApiClient, namespace: str, providers: Path
) -> None:
    """Keep Argo CD Secrets and MultiKueueClusters; take a member out and put it back."""
    from cluster_inventory.cli.demo._crds import kueue_crds
    from cluster_inventory.credentials import load_provider_file
    from cluster_inventory.integrations.sync.argocd import ArgoCDSync
    from cluster_inventory.integrations.sync.multikueue import MULTIKUEUE_CLUSTERS, MultiKueueSync

    argo_ns = "argocd"
    members = [m for m in demo.members if INVENTORIES[0].clusterset in m.clustersets]
    leaving = members[0]

    async def table(expected: set[str]) -> list[list[str]] | None:
        secrets = await kube.list_objects(
            hub, kube.SECRETS, argo_ns, label_selector=f"{LABEL_ARGOCD_SECRET_TYPE}=cluster"
        )
        by_profile = {
            objects.annotations_of(s).get(ANNOTATION_PROFILE, ""): s for s in secrets["items"]
        }
        mkcs = {
            objects.meta(m).get("name"): m
            for m in (await kube.list_objects(hub, MULTIKUEUE_CLUSTERS))["items"]
        }
        shown = {key.partition("/")[2] for key in by_profile if key.startswith(namespace)}
        if shown != expected or not expected <= mkcs.keys() or mkcs.keys() - expected:
            return None
        rows = []
        for name in sorted(expected):
            secret = by_profile[f"{namespace}/{name}"]
            data = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
            command = json.loads(data["config"])["execProviderConfig"]["command"]
            ref = objects.spec(mkcs[name]).get("clusterSource", {}).get("clusterProfileRef", {})
            rows.append(
                [
                    f"{namespace}/{name}",
                    str(objects.meta(secret).get("name")),
                    data["server"],
                    Path(command).name,
                    f"{name} -> profile {ref.get('name')}",
                ]
            )
        return rows

    headers = (
        "PROFILE",
        "ARGO CD SECRET",
        "SERVER",
        "EXEC PLUGIN",
        "MULTIKUEUECLUSTER",
    )
    everyone = {m.name for m in members}
    async with demo.step("installing Kueue's MultiKueue CRDs (sigs.k8s.io/kueue module)"):
        await kube.ensure_crds(hub, await asyncio.to_thread(kueue_crds))
        await kube.apply(
            hub, kube.NAMESPACES, {"metadata": {"name": argo_ns}}, field_manager=FIELD_MANAGER_DEMO
        )
    argo = ArgoCDSync(
        hub, load_provider_file(providers), namespaces=[namespace], argocd_namespace=argo_ns
    )
    kueue = MultiKueueSync(hub, kueue_namespace=namespace, config_name=namespace)
    async with argo, kueue:
        title = f"keeping Argo CD Secrets and MultiKueueClusters for {namespace}'s profiles"
        async with demo.step(title):
            rows = await poll(
                functools.partial(table, everyone), demo.ready_timeout, lambda: "not all yet"
            )
        demo.out(
            f"\nARGO CD AND MULTIKUEUE ({namespace}'s profiles; Secrets in {argo_ns}, "
            "MultiKueueClusters cluster-scoped)\n" + format_table(headers, rows)
        )
        registration = functools.partial(register_one, hub, demo.fleet, leaving)
        prod = INVENTORIES[0].clusterset
        title = f"taking {leaving.name} out of {namespace} (registration without {prod})"
        async with demo.step(title):
            await registration(
                [s for s in leaving.clustersets if s != INVENTORIES[0].clusterset] or ["none"]
            )
            rows = await poll(
                functools.partial(table, everyone - {leaving.name}),
                demo.ready_timeout,
                lambda: f"{leaving.name}'s Secret or MultiKueueCluster still there",
            )
        demo.out(f"\nafter {namespace}/{leaving.name} went:\n" + format_table(headers, rows))
        async with demo.step(f"putting {leaving.name} back into {namespace}"):
            await registration(list(leaving.clustersets))
            await poll(
                functools.partial(table, everyone), demo.ready_timeout, lambda: "not back yet"
            )
        demo.outcome.served = (argo.writes, kueue.writes)
