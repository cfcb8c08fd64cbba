"""``availability``'s tables, JSON and PNG from a report (pure)."""

from __future__ import annotations

import json

from cluster_inventory.cli._availability_png import render_png
from cluster_inventory.cli.availability import render_json, render_tables
from cluster_inventory.integrations.availability import TimeSeries, summarize

T0 = 1_700_000_000.0


def report():
    def s(name: str, status: str, values: str) -> TimeSeries:
        points = tuple((T0 + 60 * i, float(c)) for i, c in enumerate(values) if c != ".")
        return TimeSeries(
            labels={"namespace": "team-a", "name": name, "status": status}, points=points
        )

    reason = TimeSeries(
        labels={"namespace": "team-a", "name": "member2", "reason": "ReadyzFailed"},
        points=((T0 + 120, 1.0),),
    )
    return summarize(
        [
            s("member1", "true", "1111111111"),
            s("member2", "true", "1100011100"),
            s("member2", "false", "0011100011"),
            s("evil\x1b[2J", "true", "1111111111"),
        ],
        [reason],
        start=T0,
        end=T0 + 540,
        step=60,
    )


def test_tables_show_availability_then_each_outage_and_escape_labels() -> None:
    text = render_tables(report())
    members, outages = text.split("\n\n")
    assert members.splitlines()[0].split() == [
        "NAMESPACE", "NAME", "AVAILABILITY", "OBSERVED", "DOWN", "OUTAGES"
    ]  # fmt: skip
    rows = {line.split()[1]: line.split() for line in members.splitlines()[1:]}
    assert rows["member1"][2:] == ["100.00%", "10m", "0s", "0"]
    assert rows["member2"][2:] == ["50.00%", "10m", "5m", "2"]
    assert "evil^[[2J" in members and "\x1b" not in text
    first, second = outages.splitlines()[1:]
    assert first.split() == [
        "team-a", "member2", "2023-11-14T22:15:20Z", "2023-11-14T22:18:20Z", "3m", "False",
        "ReadyzFailed",
    ]  # fmt: skip
    assert second.split()[3:6] == ["ongoing", "2m", "False"]


def test_json_has_the_window_and_every_figure() -> None:
    doc = json.loads(render_json(report(), prometheus="http://p:9090", condition="X"))
    assert doc["stepSeconds"] == 60 and doc["start"] == "2023-11-14T22:13:20Z"
    member2 = next(m for m in doc["members"] if m["name"] == "member2")
    assert member2["availability"] == 0.5
    assert [o["end"] for o in member2["outages"]] == ["2023-11-14T22:18:20Z", None]
    assert member2["outages"][0]["seconds"] == 180


def test_png_is_an_image() -> None:
    data = render_png(report())
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
