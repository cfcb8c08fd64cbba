"""A conformance report for people: plain text for a terminal, one HTML page, JSON."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from cluster_inventory.integrations.conformance._results import required_failed

__all__ = ["dumps_json", "render_html", "render_text"]


def _managers(impl: Mapping[str, Any]) -> str:
    name = impl["ClusterManager"]
    return f"cluster manager {name}" if name else "every manager"


def render_text(doc: Mapping[str, Any]) -> str:
    """A plain report for a terminal: one line per test, then the totals."""
    lines = []
    for group, tests in doc["Groups"].items():
        lines.append(group.upper())
        for t in tests:
            mark = "PASS" if t["Conformant"] else "FAIL"
            counts = f"{t['Passed']} passed, {t['Failed']} failed, {t['Skipped']} skipped"
            lines.append(f"  {mark}  {t['Desc']}  ({counts})")
            if t["Message"] and not t["Conformant"]:
                lines.append(f"        {t['Message']}")
        lines.append("")
    impl = doc["Implementation"]
    verdict = "NOT CONFORMANT" if required_failed(doc) else "CONFORMANT"
    lines.append(
        f"{verdict}: {doc['Passed']}/{doc['Total']} tests conformant in namespace "
        f"{impl['Namespace']} ({_managers(impl)})"
    )
    return "\n".join(lines) + "\n"


def render_html(doc: Mapping[str, Any]) -> str:
    """One self-contained HTML page (inline CSS, no script, nothing fetched)."""
    impl = doc["Implementation"]
    failed = required_failed(doc)
    rows = []
    for group, tests in doc["Groups"].items():
        rows.append(f'<tr class="group"><th colspan="5">{html.escape(group)}</th></tr>')
        for t in tests:
            state = "pass" if t["Conformant"] else "fail"
            mark = "&#10004;" if t["Conformant"] else "&#10008;"
            msg = html.escape(t["Message"])
            rows.append(
                f'<tr class="{state}"><td class="mark">{mark}</td>'
                f'<td>{html.escape(t["Desc"])}<div class="msg">{msg}</div></td>'
                f"<td>{t['Passed']}</td><td>{t['Failed']}</td><td>{t['Skipped']}</td></tr>"
            )
    banner = "Not conformant" if failed else "Conformant"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Cluster Inventory conformance: {html.escape(impl["Namespace"])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #1f2328; background: #fff; }}
h1 {{ font-size: 1.5rem; margin: 0 0 .25rem; }}
.banner {{ display: inline-block; padding: .4rem .9rem; border-radius: .4rem; font-weight: 600;
  color: #fff; background: {"#cf222e" if failed else "#1a7f37"}; margin: .75rem 0 1rem; }}
table {{ border-collapse: collapse; width: 100%; max-width: 70rem; }}
th, td {{ text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #d0d7de;
  vertical-align: top; }}
tr.group th {{ background: #f6f8fa; font-size: 1.05rem; }}
tr.fail td {{ background: #ffebe9; }}
td.mark {{ width: 1.5rem; font-size: 1.1rem; }}
tr.pass td.mark {{ color: #1a7f37; }}
tr.fail td.mark {{ color: #cf222e; }}
.msg {{ color: #57606a; font-size: .85rem; margin-top: .2rem; }}
</style></head><body>
<h1>Cluster Inventory API conformance</h1>
<div>Namespace <b>{html.escape(impl["Namespace"])}</b>,
<b>{html.escape(_managers(impl))}</b></div>
<div class="banner">{banner}: {doc["Passed"]} of {doc["Total"]} tests conformant</div>
<table><thead><tr><th></th><th>Test</th><th>Passed</th><th>Failed</th><th>Skipped</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
</body></html>
"""


def dumps_json(doc: Mapping[str, Any]) -> str:
    """The report as indented JSON."""
    return json.dumps(doc, indent=2) + "\n"
