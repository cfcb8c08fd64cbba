"""The upstream consumer library ``pkg/access`` reaches every member of our manager's inventory.

``access-check`` (built against ``sigs.k8s.io/cluster-inventory-api`` v0.1.3, see
:mod:`cluster_inventory_workshop.access_check`) is what multicluster-runtime's ClusterProfile
provider, Kueue and the Knative Operator do: list the profiles, ``BuildConfigFromCP`` with a
provider file, let client-go run the exec plugin. It runs once with our
``cluster-inventory-secretreader`` and once with the upstream Go ``secretreader`` plugin, over
profiles and token Secrets written by our cluster manager.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.manager import service_account_name
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop import upstream_plugin
from cluster_inventory_workshop.access_check import access_check
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually


async def _run(binary: Path, hub_kubeconfig: Path, ns: str, providers: Path) -> list[Any]:
    run = await asyncio.to_thread(
        subprocess.run,
        [
            str(binary),
            "-kubeconfig",
            str(hub_kubeconfig),
            "-namespace",
            ns,
            "-clusterprofile-provider-file",
            str(providers),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    results: list[Any] = json.loads(run.stdout)
    return results


async def test_pkg_access_reaches_each_member_with_our_plugin_and_the_upstream_one(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    binary = await asyncio.to_thread(access_check)  # cached; fails saying how to get Go
    upstream = await asyncio.to_thread(upstream_plugin, "secretreader")
    async with running_manager(fleet, test_namespace) as h:
        ns = await h.inventory("prod", "prod")
        members = {"alpha": h.member(0), "beta": h.member(1)}
        for name, member in members.items():
            await h.register(name, member, ["prod"])

        async def ready() -> dict[str, dict[str, Any]] | None:
            profiles = {}
            for name in members:
                try:
                    profile = await h.profile(ns, name)
                    secret = await kube.get(h.hub_client, kube.SECRETS, name, namespace=ns)
                except kube.NotFoundError:
                    return None
                labels = profile["metadata"].get("labels") or {}
                status = profile.get("status") or {}
                if not (
                    status.get("accessProviders")
                    and "token" in (secret.get("data") or {})
                    and LABEL_INVENTORY_MEMBER_ID in labels
                ):
                    return None
                profiles[name] = profile
            return profiles

        profiles = await eventually(ready, timeout=60, what="profiles with tokens")
        account = service_account_name(ns, h.manager.config.name)
        kube_system = {}
        for name, member in members.items():
            async with await member.client() as admin:
                kube_system[name] = (await kube.get(admin, kube.NAMESPACES, "kube-system"))[
                    "metadata"
                ]["uid"]

        ours = provider_file(
            tmp_path / "ours.json",
            str(PLUGIN),
            ["--namespace", ns],
            {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
        )
        # The upstream plugin infers its namespace from the kubeconfig's context.
        config = fleet.hub.kubeconfig()
        config["contexts"][0]["context"]["namespace"] = ns
        hub_in_ns = tmp_path / "hub-in-inventory.kubeconfig"
        hub_in_ns.write_text(yaml.safe_dump(config))
        theirs = provider_file(
            tmp_path / "upstream.json", str(upstream), [], {"KUBECONFIG": str(hub_in_ns)}
        )

        for providers, command in ((ours, PLUGIN), (theirs, upstream)):
            results = await _run(binary, fleet.hub.kubeconfig_path, ns, providers)
            by_profile = {r["profile"]: r for r in results}
            assert sorted(by_profile) == sorted(members), results
            for name, member in members.items():
                r = by_profile[name]
                assert "error" not in r, (command.name, r["error"])
                access = profiles[name]["status"]["accessProviders"][0]["cluster"]
                assert r["server"] == access["server"] == member.server
                assert r["execCommand"] == str(command)
                assert r["execConfig"] == {"clusterName": name}
                # The member reached is the one the profile names (its kube-system UID is
                # the manager's member id), through the token the manager minted.
                assert r["kubeSystemUID"] == kube_system[name] == r["memberID"]
                assert r["namespaces"] > 0
                # ... as the ServiceAccount the manager keeps for this inventory.
                assert r["user"] == f"system:serviceaccount:{h.namespace}:{account}"
