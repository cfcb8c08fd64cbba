"""``cluster-inventory availability``: each member's availability and outages, from Prometheus.

The figures come from Prometheus's HTTP API (two range queries over the condition series,
:mod:`cluster_inventory.integrations.availability`); nothing is read from the hub. Output is
kubectl-style tables (availability per member, then one row per outage), JSON, or a PNG
timeline drawn with matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._table import format_table, human_duration

__all__ = ["availability_cmd", "render_json", "render_tables"]

OUTPUTS = ("table", "json", "png")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cluster_inventory.integrations.availability import AvailabilityReport


def _time(value: dt.datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.2f}%"


def render_tables(report: AvailabilityReport) -> str:
    """Two kubectl-style tables: availability per member, then every outage.

    Args:
        report: What :func:`~cluster_inventory.integrations.availability.read_availability`
            returned.

    Returns:
        The text (cells escaped as kubectl escapes them: the labels came from Prometheus).
    """
    members = format_table(
        ["namespace", "name", "availability", "observed", "down", "outages"],
        [
            [
                m.namespace,
                m.name,
                _percent(m.availability),
                human_duration(m.observed_seconds),
                human_duration(m.observed_seconds - m.available_seconds),
                str(len(m.outages)),
            ]
            for m in report.members
        ],
    )
    outages = [
        [
            m.namespace,
            m.name,
            _time(o.start),
            _time(o.end) or "ongoing",
            human_duration(o.seconds),
            o.status,
            o.reason,
        ]
        for m in report.members
        for o in m.outages
    ]
    if not outages:
        return members
    return (
        members
        + "\n"
        + format_table(["namespace", "name", "start", "end", "length", "status", "reason"], outages)
    )


def render_json(report: AvailabilityReport, *, prometheus: str, condition: str) -> str:
    """The report as one JSON document (times RFC 3339 UTC, lengths in seconds)."""
    doc: dict[str, Any] = {
        "prometheus": prometheus,
        "condition": condition,
        "start": _time(report.start),
        "end": _time(report.end),
        "stepSeconds": report.step,
        "members": [
            {
                "namespace": m.namespace,
                "name": m.name,
                "availability": m.availability,
                "observedSeconds": m.observed_seconds,
                "availableSeconds": m.available_seconds,
                "outages": [
                    {
                        "start": _time(o.start),
                        "end": _time(o.end) or None,
                        "seconds": o.seconds,
                        "status": o.status,
                        "reason": o.reason,
                    }
                    for o in m.outages
                ],
            }
            for m in report.members
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def availability_cmd(
    prometheus: Annotated[
        str,
        typer.Option(
            "--prometheus",
            metavar="URL",
            help="Prometheus's base URL, e.g. http://prometheus.monitoring:9090 (a "
            "user:password@ in it is sent as basic authentication).",
        ),
    ],
    since: Annotated[
        str,
        typer.Option(help="How far back, as Prometheus writes a duration: 1h, 1d, 7d, 30d."),
    ] = "7d",
    step: Annotated[
        str | None,
        typer.Option(
            help="Resolution (a duration): the precision of every figure; use the scrape "
            "interval or more. Default: the window / 10,000, at least 1s."
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Only this inventory namespace."),
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="table, json or png (a timeline per member).")
    ] = "table",
    output_file: Annotated[
        Path | None,
        typer.Option(
            help="Write the output there rather than to stdout (-o png writes to a terminal "
            "only through this)."
        ),
    ] = None,
) -> None:
    """Print each member's availability and its outages (start, end, length, reason).

    Read from Prometheus's HTTP API: the series cluster_inventory_cluster_profile_condition
    that the cluster manager exports per ClusterProfile (kube-state-metrics style), over the
    last --since. Available means ControlPlaneHealthy=True; False and Unknown are outages;
    time when no replica exported a profile counts for neither. Figures are exact to one
    --step. Nothing is read from the hub.
    """
    from cluster_inventory import kube
    from cluster_inventory.api.constants import CONDITION_CONTROL_PLANE_HEALTHY
    from cluster_inventory.integrations import availability as av

    if output not in OUTPUTS:
        fail(f"unknown output format {output!r}; use table, json or png")
    try:
        window = av.parse_duration(since)
        resolution = av.parse_duration(step) if step else None
    except ValueError as exc:
        fail(f"--since/--step: {exc}")
    if output == "png" and output_file is None and sys.stdout.isatty():
        fail("-o png writes an image: redirect stdout to a file or give --output-file")
    try:
        shown = av.server_url(prometheus)
        report = asyncio.run(
            av.read_availability(
                prometheus,
                since=window,
                step=resolution,
                namespace=namespace,
                timeout=kube.request_timeout(),
            )
        )
    except (av.PrometheusError, ValueError) as exc:
        fail(str(exc))
    if not report.members:
        sys.stderr.write(
            f"No {CONDITION_CONTROL_PLANE_HEALTHY} series of any ClusterProfile at {shown} in "
            f"the last {since}{f' in namespace {namespace}' if namespace else ''} (is the "
            "cluster manager scraped?)\n"
        )
    if output == "png":
        data = _png(report)
    elif output == "json":
        data = render_json(
            report, prometheus=shown, condition=CONDITION_CONTROL_PLANE_HEALTHY
        ).encode()
    else:
        data = render_tables(report).encode() if report.members else b""
    _write(data, output_file)


def _png(report: AvailabilityReport) -> bytes:
    try:
        from cluster_inventory.cli._availability_png import render_png
    except ModuleNotFoundError as exc:
        fail(
            f"-o png needs matplotlib ({exc.name} is not installed): pip install "
            "'cluster-inventory[plot]'"
        )
    return render_png(report)


def _write(data: bytes, path: Path | None) -> None:
    if path is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        path.write_bytes(data)
    except OSError as exc:
        fail(f"{path}: cannot write: {exc.strerror}")
