"""Errors carry the object, the field and the problem, so no caller parses a message."""

from __future__ import annotations

from cluster_inventory.credentials import (
    AccessNotPublished,
    AccessResolutionError,
    ExecPluginTimeout,
    ProviderConfigError,
)


def test_provider_config_error_keeps_its_parts() -> None:
    exc = ProviderConfigError("providers.json", "providers[0].name", "is required")
    assert (exc.source, exc.field, exc.problem) == (
        "providers.json",
        "providers[0].name",
        "is required",
    )
    assert str(exc) == "providers.json: providers[0].name: is required"


def test_access_resolution_error_keeps_its_parts() -> None:
    exc = AccessResolutionError("team-a/m1", "is missing", field="status.x.server")
    assert (exc.profile, exc.field, exc.problem) == ("team-a/m1", "status.x.server", "is missing")
    assert str(exc) == "ClusterProfile team-a/m1: status.x.server: is missing"
    assert AccessNotPublished("team-a/m1", "none yet").field == "status.accessProviders"


def test_exec_plugin_error_keeps_its_problem() -> None:
    exc = ExecPluginTimeout("plugin", "secretreader", 2.5)
    assert (exc.command, exc.provider, exc.problem) == (
        "plugin",
        "secretreader",
        "did not finish within 2.5 s; killed",
    )


def test_no_access_error_names_its_field_twice() -> None:
    """Every reason resolve_access refuses a profile for says the field once, in ``field``."""
    from cluster_inventory.credentials import AccessResolutionError, ProviderConfig, resolve_access

    providers = ProviderConfig.from_dict(
        {
            "providers": [
                {
                    "name": "p",
                    "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "c"},
                }
            ]
        }
    )

    def profile(**cluster: object) -> dict[str, object]:
        return {
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ClusterProfile",
            "metadata": {"name": "m1", "namespace": "team-a"},
            "spec": {"clusterManager": {"name": "cm"}},
            "status": {"accessProviders": [{"name": "p", "cluster": cluster}]} if cluster else {},
        }

    bad = [
        profile(),
        profile(server=""),
        profile(server="https://m1", **{"certificate-authority-data": "%%"}),
        profile(server="https://m1", **{"insecure-skip-tls-verify": True}),
        profile(server="https://m1", extensions=[{"name": "a"}, {"name": "a"}]),
    ]
    for each in bad:
        try:
            resolve_access(each, providers)
        except AccessResolutionError as exc:
            assert exc.field not in exc.problem, exc
            assert str(exc).count(exc.field) == 1, exc
        else:
            raise AssertionError(f"accepted {each}")
