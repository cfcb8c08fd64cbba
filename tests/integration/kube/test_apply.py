"""Server-side apply on a real API server, under each field validation directive."""

from __future__ import annotations

import pytest

from cluster_inventory import kube


@pytest.mark.parametrize("directive", ["Strict", "Warn", "Ignore", None])
async def test_apply_refuses_unknown_fields_under_every_directive(
    hub, test_namespace: str, directive: kube.FieldValidation | None
) -> None:
    # Apply builds a typed patch from the schema first, so an unknown field is refused before
    # any directive applies: ``Ignore`` loses no check that ``Warn`` or ``Strict`` would make
    # on a body serialised from a dict (which cannot repeat a key).
    name = f"fields-{str(directive).lower()}"
    body = {
        "metadata": {"name": name, "namespace": test_namespace},
        "spec": {"clusterManager": {"name": "test"}, "colour": "red"},
    }
    async with await hub.client() as client:
        with pytest.raises(kube.KubeAPIError, match=r"\.spec\.colour: field not declared"):
            await kube.apply(
                client,
                kube.CLUSTER_PROFILES,
                body,
                field_manager="test",
                field_validation=directive,
            )
        del body["spec"]["colour"]
        stored = await kube.apply(
            client, kube.CLUSTER_PROFILES, body, field_manager="test", field_validation=directive
        )
        assert stored["spec"] == {"clusterManager": {"name": "test"}}
