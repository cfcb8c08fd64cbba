"""Access providers the hub cannot store are refused before a write, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_inventory.api import StorableError, check_storable


def profile(*extensions: dict[str, Any], field: str = "accessProviders") -> dict[str, Any]:
    return {
        "metadata": {"name": "east", "namespace": "team-a"},
        "status": {
            field: [
                {"name": "secretreader", "cluster": {"server": "https://e", "extensions": []}},
                {
                    "name": "other",
                    "cluster": {"server": "https://e", "extensions": list(extensions)},
                },
            ]
        },
    }


EXEC = {"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "east"}}
ARGS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"


def test_distinct_object_extensions_are_storable() -> None:
    check_storable(profile(EXEC, {"name": "x", "extension": {}}))
    check_storable({"status": {}})
    check_storable({})


@pytest.mark.parametrize(
    ("extensions", "field", "message"),
    [
        (
            (EXEC, {"name": ARGS, "extension": ["--flag"]}),
            "accessProviders",
            f"team-a/east: status.accessProviders[1].cluster.extensions[1].extension ({ARGS}): "
            "the payload must be an object",
        ),
        (
            (EXEC, EXEC),
            "accessProviders",
            "team-a/east: status.accessProviders[1].cluster.extensions[1].name: "
            "'client.authentication.k8s.io/exec' repeats extensions[0]",
        ),
        (
            ({"name": "s", "extension": "text"},),
            "credentialProviders",
            "team-a/east: status.credentialProviders[1].cluster.extensions[0].extension (s)",
        ),
    ],
)
def test_refusals_name_the_profile_and_the_field(
    extensions: tuple[dict[str, Any], ...], field: str, message: str
) -> None:
    with pytest.raises(StorableError) as caught:
        check_storable(profile(*extensions, field=field))
    assert str(caught.value).startswith(message)
