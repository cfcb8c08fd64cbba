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
    exc = AccessResolutionError("team-a/m1", "server is missing", field="status.x.server")
    assert (exc.profile, exc.field, exc.problem) == (
        "team-a/m1",
        "status.x.server",
        "server is missing",
    )
    assert str(exc) == "ClusterProfile team-a/m1: server is missing"
    assert AccessNotPublished("team-a/m1", "none yet").field == "status.accessProviders"


def test_exec_plugin_error_keeps_its_problem() -> None:
    exc = ExecPluginTimeout("plugin", "secretreader", 2.5)
    assert (exc.command, exc.provider, exc.problem) == (
        "plugin",
        "secretreader",
        "did not finish within 2.5 s; killed",
    )
