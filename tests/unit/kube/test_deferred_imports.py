"""The deferred libraries under kubernetes_asyncio's core still work when someone uses them.

``kube._k8s`` defers ``urllib3`` and ``dateutil.parser`` (issue 48); code that imports them
after us, in any of the usual ways, must get the real libraries. Each check runs in a fresh
interpreter: in this one they are long imported, and deferring is a no-op then.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", "import cluster_inventory.kube\n" + code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_parse_the_core_bound_at_import_parses_dates() -> None:
    out = _run(
        "import kubernetes_asyncio.client.api_client as core\n"
        "print(core.parse('2026-11-25T13:00:00Z').isoformat())"
    )
    assert out == "2026-11-25T13:00:00+00:00"


@pytest.mark.parametrize(
    "code",
    [
        "from dateutil.parser import isoparse\nprint(isoparse('2026-11-25').year)",
        "import dateutil.parser\nprint(dateutil.parser.parse('2026-11-25').year)",
        "from dateutil import parser\nprint(parser.isoparse('2026-11-25').year)",
    ],
)
def test_dateutil_imported_after_us_is_the_real_parser(code: str) -> None:
    assert _run(code) == "2026"


def test_urllib3_imported_after_us_is_the_real_library() -> None:
    out = _run(
        "import urllib3\n"
        "print(urllib3.util.make_headers(basic_auth='a:b')['authorization'],"
        " urllib3.PoolManager.__name__)"
    )
    assert out == "Basic YTpi PoolManager"


def test_a_library_imported_before_us_is_left_alone() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import urllib3, dateutil.parser\nimport cluster_inventory.kube\nimport sys\n"
            "print(type(sys.modules['urllib3']).__name__,"
            " type(sys.modules['dateutil.parser']).__name__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "module module"
