"""``cluster-inventory --help`` without importing typer (the most typed command starts first).

Importing typer, click and rich to print one screen of text costs most of a second; this
module prints the same facts from a table kept beside the app. A unit test compares the
table with the typer app's own commands and summaries, so the two cannot drift apart.
``COMMAND --help`` and everything else go through typer as usual.
"""

from __future__ import annotations

__all__ = ["COMMANDS", "DESCRIPTION", "OPTIONS", "top_level_help"]

#: The app's description (``typer.Typer(help=...)``).
DESCRIPTION = (
    "Cluster Inventory API toolkit: ClusterProfile CRDs, the cluster manager, consumer "
    "credentials (KEP-5339) and a local fleet of real control planes."
)

#: Every top-level command and group, in the app's order, with its one-line summary.
COMMANDS = (
    ("apply", "Server-side apply manifests to every member cluster an inventory selects."),
    ("version", "Print the version of cluster-inventory and of the pinned control-plane builds."),
    ("register", "Register a member cluster: write its registration Secret on the hub."),
    (
        "deregister",
        "Deregister a member: its profiles and token Secrets are then removed by the manager.",
    ),
    (
        "kubeconfig",
        "Print a kubeconfig that reaches PROFILE's member through the secretreader plugin.",
    ),
    ("get", "List ClusterProfiles or PlacementDecisions on the hub, or show one."),
    (
        "conformance",
        "Check an inventory against the Cluster Inventory API's Required and Optional rules.",
    ),
    (
        "describe",
        "Show one ClusterProfile in full: conditions, properties, access providers, Events.",
    ),
    ("demo", "Show the whole Cluster Inventory API on a local fleet of real control planes."),
    ("dashboard", "Serve a read-only web page of the inventory, live from the hub."),
    (
        "availability",
        "Print each member's availability and its outages (start, end, length, reason).",
    ),
    ("manager", "The cluster manager (runs on a hub)."),
    ("agent", "The member agent (runs on a member the hub cannot reach)."),
    ("proxy", "The cluster proxy (consumers reach agent members through their tunnels)."),
    ("fleet", "A local fleet of real control planes (hub + members)."),
    ("crds", "The Cluster Inventory CRDs."),
    ("testing", "Test assets."),
    (
        "placement",
        "Placements: choose member clusters and publish PlacementDecisions (KEP-5313).",
    ),
    (
        "argocd",
        "Argo CD cluster Secrets kept from ClusterProfiles (Argo CD >= 3.5 exec providers).",
    ),
    (
        "multikueue",
        "Kueue MultiKueueClusters kept from ClusterProfiles, and Kueue's configuration.",
    ),
)


#: The options of the command itself (the app's callback), as ``(flag and metavar, help)``;
#: the help is the typer option's own, followed by what typer adds in brackets.
OPTIONS = (
    ("--version", "Print the version and exit (as container images and packagers expect)."),
    (
        "--request-timeout SECONDS",
        "Seconds to wait for one answer from an API server before calling it unreachable. "
        "[env var: CLUSTER_INVENTORY_REQUEST_TIMEOUT] [default: 30.0]",
    ),
    ("--help", "Show this message and exit."),
)


def top_level_help(prog: str) -> str:
    """The top-level help text.

    Args:
        prog: How the user ran us: ``cluster-inventory``, or ``kubectl inventory`` for the
            kubectl plugin.

    Returns:
        The help, ending with a newline.
    """
    width = max(len(name) for name, _ in COMMANDS)
    option_width = max(len(flag) for flag, _ in OPTIONS)
    lines = [
        f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...",
        "",
        DESCRIPTION,
        "",
        "Commands:",
        *(f"  {name.ljust(width)}  {summary}" for name, summary in COMMANDS),
        "",
        "Options:",
        *(f"  {flag.ljust(option_width)}  {text}" for flag, text in OPTIONS),
        "",
        f"Run '{prog} COMMAND --help' for the options of a command.",
    ]
    return "\n".join(lines) + "\n"
