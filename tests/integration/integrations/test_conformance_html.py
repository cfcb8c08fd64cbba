"""The conformance HTML report, rendered by a real browser (Debian's headless Chromium)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

from cluster_inventory.integrations.conformance import Served, evaluate, render_html, report

_HOW = (
    "Debian's chromium is needed to render the HTML report: `make assets` installs it "
    "(as root: apt-get install -y chromium)."
)
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, _HOW
    return found


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB(A), non-interlaced PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    channels = 4
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and color in (2, 6) and data[12] == 0
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytes(width * channels)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = prev[x], prev[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = bytes(line)
    return width, height, rows


def test_the_report_renders_as_a_page_that_names_every_check(tmp_path: Path) -> None:
    chromium = _chromium()
    profiles = [
        {
            "metadata": {"name": "forged", "namespace": "inv", "labels": {}},
            "spec": {"clusterManager": {"name": "m"}},
        }
    ]
    doc = report(
        evaluate(Served(served=True, namespaced=True, listable=True), profiles),
        namespace="inv",
        cluster_manager=None,
    )
    page = tmp_path / "report.html"
    page.write_text(render_html(doc))
    profile_dir = tmp_path / "profile"
    common = [chromium, *_FLAGS, f"--user-data-dir={profile_dir}"]
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for group in doc["Groups"].values():
        for test in group:
            assert test["Desc"].replace("'", "&#x27;") in dom.stdout or test["Desc"] in dom.stdout
    assert "Not conformant" in dom.stdout

    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    width, height, rows = _pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    colours = {row[i : i + 3] for row in rows[::10] for i in range(0, len(row), 40)}
    assert len(colours) > 5, "the screenshot is blank"
    red = any(c[0] > 180 and c[1] < 80 and c[2] < 80 for c in colours)
    assert red, "the failing banner and rows should show in red"
