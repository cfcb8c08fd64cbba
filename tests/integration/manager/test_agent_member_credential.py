"""An agent member's consumers get the token its agent keeps (docs/agent.md, the credential).

The agent mints a token of a member ServiceAccount from inside and writes it to its own
credential Secret on the hub (the one ``manager accept`` created, the only Secret its
identity may write); the cluster manager, never given a route to the member, copies it into
the ``<inventory>/<profile>`` Secret the secretreader plugin reads. A consumer with the
plugin then reaches the member as that ServiceAccount.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.agent import ReportingAgent, ReportingConfig
from cluster_inventory.api.agents import agent_credential_name
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_GRANT,
)
from cluster_inventory.credentials import CredentialCache, CredentialMetrics, connect
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import Fleet
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.agents import running, self_subject
from tests.support.hub.manager import Clock, running_manager
from tests.support.waiting import eventually


def _digest(secret: dict[str, Any]) -> str | None:
    """A digest of the Secret's token (the token itself never reaches an assertion)."""
    token = (secret.get("data") or {}).get("token")
    return hashlib.sha256(base64.b64decode(token)).hexdigest()[:12] if token else None


async def test_the_agent_keeps_its_consumers_token_and_the_manager_hands_it_out(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    name, member = next(iter(fleet.members.items()))
    account = f"consumer-{uuid.uuid4().hex[:6]}"
    other = f"other-{uuid.uuid4().hex[:6]}"
    agent_clock = Clock()
    async with (
        running_manager(fleet, test_namespace) as h,
        await member.client() as on_member,
        contextlib.AsyncExitStack() as stack,
    ):
        inventory = await h.inventory("edge", "edge")
        acceptance = await accept(h.hub_client, test_namespace, name, ["edge"])
        agent_hub = await stack.enter_async_context(
            await h.hub.client(acceptance.agent_user, list(acceptance.agent_groups))
        )
        await accept(h.hub_client, test_namespace, other, ["elsewhere"])
        # What consumers may do on the member is the member admin's choice: here, view the
        # test's namespace.
        meta = {"name": account, "namespace": test_namespace}
        await kube.create(on_member, kube.SERVICE_ACCOUNTS, {"metadata": meta})
        binding = {
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": test_namespace}],
        }
        await kube.apply(on_member, kube.ROLE_BINDINGS, binding, field_manager="test")

        # The agent identity may write its own credential Secret only (RBAC by name).
        await eventually(
            lambda: kube.get(agent_hub, kube.SECRETS, agent_credential_name(name), test_namespace),
            what="the agent identity may read its credential Secret",
        )
        with pytest.raises(kube.ForbiddenError):
            forged = {
                "metadata": {"name": agent_credential_name(other), "namespace": test_namespace},
                "data": {"token": "eA=="},
            }
            await kube.apply(agent_hub, kube.SECRETS, forged, field_manager="test")

        config = ReportingConfig(
            name=name,
            namespace=test_namespace,
            server=member.server,
            ca_pem=member.ca_pem,
            lease_duration=1.0,
            probe_interval=0.5,
            consumer_service_account=(test_namespace, account),
        )
        agent = ReportingAgent(agent_hub, member.connection(), config, now=agent_clock)
        try:
            async with running(agent.run()):

                async def handed_out() -> dict[str, Any] | None:
                    try:
                        secret = await kube.get(h.hub_client, kube.SECRETS, name, inventory)
                    except kube.NotFoundError:
                        return None
                    return secret if _digest(secret) else None

                first = await eventually(handed_out, what="the consumer token Secret")
                assert first["metadata"]["ownerReferences"][0]["kind"] == "ClusterProfile"
                grant = first["metadata"]["annotations"][ANNOTATION_TOKEN_GRANT]
                assert grant.endswith(f":{test_namespace}/{account}")
                kept = await kube.get(
                    h.hub_client, kube.SECRETS, agent_credential_name(name), test_namespace
                )
                assert _digest(kept) == _digest(first)

                # A consumer in the inventory, with the plugin, is that ServiceAccount.
                providers = provider_file(
                    tmp_path / "providers.json",
                    str(PLUGIN),
                    ["--namespace", inventory],
                    {"KUBECONFIG": str(h.hub.kubeconfig_path)},
                )
                profile = await h.profile(inventory, name)
                cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
                async with await connect(profile, providers, cache=cache) as consumer:
                    who = await self_subject(consumer)
                    assert who["username"] == f"system:serviceaccount:{test_namespace}:{account}"
                    await eventually(
                        lambda: kube.list_objects(consumer, kube.CONFIG_MAPS, test_namespace),
                        what="the consumer's view binding",
                    )
                    with pytest.raises(kube.ForbiddenError):
                        await kube.list_objects(consumer, kube.CONFIG_MAPS, "kube-system")

                # Rotation: at 80% of its life the agent mints again; consumers follow.
                assert agent.credential is not None and agent.credential.minted == 1
                agent_clock.offset = dt.timedelta(minutes=48)
                await agent.credential.ensure()
                assert agent.credential.minted == 2

                async def rotated() -> bool:
                    secret = await handed_out()
                    return secret is not None and _digest(secret) not in (None, _digest(first))

                await eventually(rotated, what="the rotated token in the consumer Secret")
        finally:
            await agent.stop()
