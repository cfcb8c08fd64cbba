"""Steps 5 and 6: a consumer with its own Role, the runtime example, members reached by exec."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml

from cluster_inventory import api, kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_DEMO
from cluster_inventory.api.views import ProfileView
from cluster_inventory.cli._files import console_script, write_private
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo._plan import CONSUMER, INVENTORIES, SYNCED_CONFIGMAP, DemoRun, poll


async def make_consumer(demo: DemoRun, hub: kube.ApiClient, namespace: str) -> tuple[Path, Path]:
    """Make the consumer ServiceAccount with a Role on its inventory only.

    Returns:
        Its kubeconfig and its provider file (the secretreader plugin), both under the
        fleet's workdir.
    """
    rules = [
        {  # consumers read PlacementDecisions, never write them (KEP-5313)
            "apiGroups": [api.GROUP],
            "resources": ["clusterprofiles", "placementdecisions"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    ]
    meta = {"name": CONSUMER, "namespace": namespace}
    await kube.apply(
        hub, kube.SERVICE_ACCOUNTS, {"metadata": meta}, field_manager=FIELD_MANAGER_DEMO
    )
    await kube.apply(
        hub, kube.ROLES, {"metadata": meta, "rules": rules}, field_manager=FIELD_MANAGER_DEMO
    )
    binding = {
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CONSUMER},
        "subjects": [{"kind": "ServiceAccount", "name": CONSUMER, "namespace": namespace}],
    }
    await kube.apply(hub, kube.ROLE_BINDINGS, binding, field_manager=FIELD_MANAGER_DEMO)
    token = await kube.request_service_account_token(hub, namespace, CONSUMER)
    first = namespace == INVENTORIES[0].namespace
    home = demo.fleet.workdir / ("consumer" if first else f"consumer-{namespace}")
    home.mkdir(parents=True, exist_ok=True)
    config = demo.fleet.hub.kubeconfig(CONSUMER, token=token.token, namespace=namespace)
    kubeconfig = home / "kubeconfig"
    write_private(kubeconfig, yaml.safe_dump(config, sort_keys=False))
    providers = home / "providers.json"
    exec_config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": console_script("cluster-inventory-secretreader"),
        "args": ["--kubeconfig", str(kubeconfig), "--namespace", namespace],
        "provideClusterInfo": True,
        "interactiveMode": "Never",
    }
    document = {"providers": [{"name": "secretreader", "execConfig": exec_config}]}
    providers.write_text(json.dumps(document, indent=2) + "\n")
    return kubeconfig, providers


async def consume(
    demo: DemoRun, hub: kube.ApiClient, me: kube.ApiClient, namespace: str, providers: Path
) -> None:
    """Run the runtime example as the consumer, then reach each member through the plugin."""
    from cluster_inventory import credentials
    from cluster_inventory.runtime import FleetManager
    from cluster_inventory.runtime.configmap_sync import ConfigMapSync

    data = {"color": "blue", "owner": "platform-team"}
    runtime: FleetManager | None = None
    body = {"metadata": {"name": SYNCED_CONFIGMAP, "namespace": namespace}, "data": data}
    async with demo.step(f"syncing ConfigMap {namespace}/{SYNCED_CONFIGMAP} with the runtime"):
        await kube.apply(hub, kube.CONFIG_MAPS, body, field_manager=FIELD_MANAGER_DEMO)
        runtime = FleetManager(me, str(providers), namespaces=[namespace], name="demo")
        ConfigMapSync(runtime, namespace, SYNCED_CONFIGMAP, "default")
        await runtime.start()
        await runtime.wait_synced()
    try:
        rows: list[list[str]] = []
        title = f"reaching each member as {namespace}/{CONSUMER} through the secretreader"
        async with demo.step(title):
            config = credentials.load_provider_file(providers)
            listed = await kube.list_objects(me, kube.CLUSTER_PROFILES, namespace)
            for profile in listed["items"]:
                name = ProfileView.of(profile).name
                async with await credentials.connect(profile, config) as member:
                    copy = await poll(
                        functools.partial(_configmap, member),
                        demo.ready_timeout,
                        functools.partial(_not_copied, name),
                    )
                    spaces = await kube.list_objects(member, kube.NAMESPACES)
                names = ",".join(str(objects.meta(n).get("name")) for n in spaces["items"])
                shown = ",".join(f"{k}={v}" for k, v in sorted(copy.items()))
                rows.append([f"{namespace}/{name}", names, shown])
                demo.outcome.reached.append(name)
            for other in INVENTORIES:
                if other.namespace == namespace:
                    continue
                try:
                    await kube.list_objects(me, kube.CLUSTER_PROFILES, other.namespace)
                except kube.ForbiddenError:
                    demo.outcome.refused = other.namespace
                else:
                    raise RuntimeError(
                        f"{namespace}/{CONSUMER} could list profiles in {other.namespace}; "
                        "its Role should cover only its own inventory"
                    )
    finally:
        if runtime is not None:
            await runtime.stop()
    demo.out(
        f"\nCONSUMER {namespace}/{CONSUMER} (provider file {providers.name}, plugin "
        f"cluster-inventory-secretreader; ConfigMap default/{SYNCED_CONFIGMAP})\n"
        + format_table(("PROFILE", "NAMESPACES ON THE MEMBER", "SYNCED CONFIGMAP"), rows)
    )
    if demo.outcome.refused:
        demo.out(
            f"{namespace}/{CONSUMER} listing profiles in {demo.outcome.refused}: "
            "forbidden, as its Role intends\n"
        )


def _not_copied(name: str) -> str:
    return f"{name}: the runtime has not copied the ConfigMap yet"


async def _configmap(member: kube.ApiClient) -> dict[str, str] | None:
    try:
        found = await kube.get(member, kube.CONFIG_MAPS, SYNCED_CONFIGMAP, namespace="default")
    except kube.NotFoundError:
        return None
    data: dict[str, str] = found.get("data") or {}
    return data
