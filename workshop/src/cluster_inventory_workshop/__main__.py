"""``cluster-inventory-workshop``: build what the suite needs, regenerate checked-in files.

Commands:

- ``install-assets [--force]``: the control-plane binaries (as ``cluster-inventory testing
  install-assets`` does), then the upstream plugins and CRDs, the Argo CD and ``pkg/access``
  checks, the consumers (Kueue, the Knative Operator), the tools (helm, promtool, prometheus,
  toxiproxy) and the virtual members' proxy; prints each path. ``make assets`` runs it.
- ``manifests``: rewrite ``deploy/`` from the Helm chart (``make manifests``).
- ``demo-crds``: rewrite the Kueue CRDs the demo ships (``cluster_inventory/cli/demo/crds``)
  from the pinned ``sigs.k8s.io/kueue`` module (``make demo-crds``).

Exit status 1 with ``error: ...`` on stderr when Go is missing or a build fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["install_everything", "main"]


def _progress(line: str) -> None:
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()


def install_everything(*, force: bool = False) -> list[Path]:
    """Build (or find cached) every asset the suite runs; the control planes first.

    Args:
        force: Rebuild the control-plane binaries even if cached.

    Returns:
        The control-plane asset directory, then each built binary.

    Raises:
        GoNotFoundError: Go is not installed.
        GoBuildError: A build or a module download failed.
    """
    from cluster_inventory.testing import install_assets
    from cluster_inventory_workshop.access_check import access_check
    from cluster_inventory_workshop.argocd_check import argocd_check
    from cluster_inventory_workshop.consumers import CONSUMERS, install_consumer
    from cluster_inventory_workshop.tools import TOOLS, install_tool
    from cluster_inventory_workshop.upstream_crds import UPSTREAM_CRDS, upstream_crd
    from cluster_inventory_workshop.upstream_plugins import upstream_plugin
    from cluster_inventory_workshop.virtual_members_proxy import virtual_members_binary

    built = [install_assets(progress=_progress, force=force)]
    built += [
        upstream_plugin(name, progress=_progress)
        for name in ("secretreader", "kubeconfig-secretreader")
    ]
    # Upstream CRDs the integration tests install (module zips, no compile).
    for crd in UPSTREAM_CRDS:
        upstream_crd(crd, progress=_progress)
    built.append(argocd_check(progress=_progress))
    # The upstream consumer library (pkg/access) and the consumers' own controllers the
    # end-to-end tests run: Kueue's manager and the Knative Operator.
    built.append(access_check(progress=_progress))
    built += [install_consumer(name, progress=_progress) for name in CONSUMERS]
    # helm renders the chart, promtool checks the alerting rules (packaging tests),
    # prometheus scrapes the availability test's exporter, toxiproxy breaks network paths
    # for the fault tests.
    built += [install_tool(name, progress=_progress) for name in TOOLS]
    built.append(virtual_members_binary(progress=_progress))
    return built


def main(argv: Sequence[str] | None = None) -> int:
    """Run one workshop command (see the module docstring).

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when None.

    Returns:
        The exit status: 0, or 1 after an ``error:`` line on stderr.
    """
    parser = argparse.ArgumentParser(prog="cluster-inventory-workshop", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install-assets", help="build everything the suite runs")
    install.add_argument("--force", action="store_true", help="rebuild the control planes")
    commands.add_parser("manifests", help="rewrite deploy/ from the Helm chart")
    commands.add_parser("demo-crds", help="rewrite the demo's Kueue CRDs from their module")
    args = parser.parse_args(argv)

    from cluster_inventory.testing import GoBuildError, GoNotFoundError

    try:
        if args.command == "install-assets":
            for path in install_everything(force=args.force):
                sys.stdout.write(f"{path}\n")
        elif args.command == "manifests":
            from cluster_inventory_workshop.chart import REPO, write_deploy

            for changed in write_deploy():
                sys.stdout.write(f"wrote {changed.relative_to(REPO)}\n")
        else:
            from cluster_inventory_workshop.demo_crds import write_demo_crds

            for changed in write_demo_crds(progress=_progress):
                sys.stdout.write(f"wrote {changed}\n")
    except (GoNotFoundError, GoBuildError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
