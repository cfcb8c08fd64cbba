"""Another project gets the fixtures when it enables the plugin, and nothing when it does not."""

from __future__ import annotations

import pytest

from cluster_inventory.testing import find_binary

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def assets() -> str:
    # Resolved before pytester gives the child project a fresh HOME.
    return str(find_binary("kube-apiserver").parent)


def test_a_foreign_project_uses_fleet_and_test_namespace(
    assets: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBEBUILDER_ASSETS", assets)
    pytester.makeini(
        """
        [pytest]
        cluster_inventory_members = 1
        cluster_inventory_controllers = false
        """
    )
    pytester.makeconftest('pytest_plugins = ["cluster_inventory.testing.pytest_plugin"]')
    pytester.makepyfile(
        """
        import asyncio
        from cluster_inventory import kube

        seen = []

        def test_fleet_shape(fleet, hub):
            assert hub is fleet.hub
            assert list(fleet.members) == ["member1"]

        def test_namespace_exists_everywhere(fleet, test_namespace):
            seen.append(test_namespace)
            async def check():
                for cp in fleet.clusters:
                    async with await cp.client() as client:
                        await kube.get(client, kube.NAMESPACES, test_namespace)
            asyncio.run(check())

        def test_namespaces_differ_per_test(test_namespace):
            assert seen and test_namespace != seen[0]
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:asyncio", "-W", "error"
    )
    result.assert_outcomes(passed=3)


def test_a_project_that_does_not_enable_it_gets_no_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_nothing_of_ours_is_loaded():
            assert "cluster_inventory.testing.pytest_plugin" not in sys.modules

        def test_fleet(fleet):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'fleet' not found*"])
