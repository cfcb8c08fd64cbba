"""kubectl's output shapes: AGE, -o json, -o yaml, the List wrapper and -o jsonpath."""

from __future__ import annotations

import ast
import datetime as dt
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.cli import printers
from cluster_inventory.cli.printers import (
    JSONPathError,
    age,
    human_duration,
    jsonpath,
    list_object,
    relaxed_jsonpath,
    to_json,
    to_yaml,
)

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
YEAR = 365 * DAY


def profile(name: str, healthy: str, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ClusterProfile as the API server returns it (trimmed)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "fleet",
        "creationTimestamp": "2026-11-23T10:00:00Z",
    }
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": meta,
        "spec": {"clusterManager": {"name": "fleet-manager"}, "displayName": name},
        "status": {
            "conditions": [
                {"type": "Joined", "status": "True", "reason": "Joined"},
                {"type": "ControlPlaneHealthy", "status": healthy, "reason": "Probed"},
            ],
            "version": {"kubernetes": "v1.34.1"},
        },
    }


PROFILES = list_object(
    [
        profile("member-1", "True", labels={"x-k8s.io/cluster-set": "prod", "a.b/c": "dotted"}),
        profile("member-2", "False"),
    ]
)


# --- module ------------------------------------------------------------------------------------


def test_all_names_the_public_api() -> None:
    assert sorted(printers.__all__) == [
        "JSONPathError",
        "age",
        "format_table",
        "human_duration",
        "jsonpath",
        "list_object",
        "relaxed_jsonpath",
        "to_json",
        "to_yaml",
    ]
    assert all(callable(getattr(printers, name)) for name in printers.__all__)


def test_module_imports_only_the_standard_library_and_yaml() -> None:
    tree = ast.parse(Path(printers.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__"} <= set(sys.stdlib_module_names) | {"yaml"}


def test_format_table_is_unchanged() -> None:
    out = printers.format_table(["name", "age"], [["a", "5m"], ["long-name", ""]])
    assert out == "NAME        AGE\na           5m\nlong-name   <none>\n"


# --- human_duration ----------------------------------------------------------------------------

# The boundaries of apimachinery's HumanDuration (duration_test.go), in seconds.
DURATIONS = [
    (-2.0, "<invalid>"),
    (-1e6, "<invalid>"),
    (-1.999999999, "0s"),
    (-1.0, "0s"),
    (-0.5, "0s"),
    (0, "0s"),
    (0.999, "0s"),
    (1, "1s"),
    (70, "70s"),
    (2 * MINUTE - 0.001, "119s"),
    (2 * MINUTE, "2m"),
    (2 * MINUTE + 1, "2m1s"),
    (190, "3m10s"),
    (10 * MINUTE - 0.001, "9m59s"),
    (10 * MINUTE, "10m"),
    (10 * MINUTE + 1, "10m"),
    (70 * MINUTE, "70m"),
    (3 * HOUR - 0.001, "179m"),
    (3 * HOUR, "3h"),
    (3 * HOUR + MINUTE, "3h1m"),
    (8 * HOUR - 0.001, "7h59m"),
    (8 * HOUR, "8h"),
    (8 * HOUR + 59 * MINUTE, "8h"),
    (47 * HOUR, "47h"),
    (2 * DAY - 0.001, "47h"),
    (2 * DAY, "2d"),
    (49 * HOUR, "2d1h"),
    (8 * DAY - 0.001, "7d23h"),
    (8 * DAY, "8d"),
    (8 * DAY + 23 * HOUR, "8d"),
    (367 * DAY, "367d"),
    (2 * YEAR - 0.001, "729d"),
    (2 * YEAR, "2y"),
    (2 * YEAR + DAY - 0.001, "2y"),
    (2 * YEAR + DAY, "2y1d"),
    (2 * YEAR + 25 * HOUR, "2y1d"),
    (3 * YEAR, "3y"),
    (8 * YEAR - 0.001, "7y364d"),
    (8 * YEAR, "8y"),
    (8 * YEAR + 2 * HOUR, "8y"),
    (8 * YEAR + 200 * DAY, "8y"),
    (12 * YEAR, "12y"),
]


@pytest.mark.parametrize(("seconds", "expected"), DURATIONS)
def test_human_duration_matches_apimachinery(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -math.inf])
def test_human_duration_rejects_non_finite(seconds: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        human_duration(seconds)


UNIT_SECONDS = {"s": 1, "m": MINUTE, "h": HOUR, "d": DAY, "y": YEAR}


def read_back(text: str) -> tuple[int, int]:
    """The seconds a HumanDuration text stands for, and the size of its last unit."""
    parts = re.findall(r"(\d+)([smhdy])", text)
    assert "".join(n + u for n, u in parts) == text
    return sum(int(n) * UNIT_SECONDS[u] for n, u in parts), UNIT_SECONDS[parts[-1][1]]


@given(st.integers(min_value=0, max_value=15 * YEAR))
def test_human_duration_truncates_to_its_last_unit(seconds: int) -> None:
    shown, unit = read_back(human_duration(seconds))
    assert 0 <= seconds - shown < unit


@given(st.integers(min_value=0, max_value=15 * YEAR), st.integers(min_value=0, max_value=YEAR))
def test_human_duration_never_goes_backwards(seconds: int, later: int) -> None:
    assert read_back(human_duration(seconds))[0] <= read_back(human_duration(seconds + later))[0]


# --- age ---------------------------------------------------------------------------------------

NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2026-11-23T12:00:00Z", "0s"),
        ("2026-11-23T11:54:30Z", "5m30s"),
        ("2026-11-23T10:00:00Z", "120m"),
        ("2026-11-23T08:00:00Z", "4h"),
        ("2026-11-20T10:00:00Z", "3d2h"),
        ("2024-11-23T12:00:00Z", "2y"),
        ("2026-11-23T12:00:01Z", "0s"),  # a second of clock skew
        ("2026-11-23T12:00:05Z", "<invalid>"),
        ("2026-11-23T13:54:30+02:00", "5m30s"),
        ("2026-11-23T06:54:30-05:00", "5m30s"),
        ("2026-11-23T11:54:29.999999999Z", "5m30s"),  # MicroTime, fraction truncated
        ("2026-11-23t11:54:30z", "5m30s"),
        (None, "<unknown>"),
        ("", "<unknown>"),
        ("0001-01-01T00:00:00Z", "<unknown>"),  # Go's zero time
        ("yesterday", "<unknown>"),
        ("2026-11-23", "<unknown>"),
        ("2026-11-23 11:54:30Z", "<unknown>"),
        ("2026-11-23T11:54:30", "<unknown>"),
        ("2026-13-01T00:00:00Z", "<unknown>"),
        ("2026-11-23T11:54:30+24:00", "<unknown>"),
    ],
)
def test_age_of_a_creation_timestamp(timestamp: str | None, expected: str) -> None:
    assert age(timestamp, NOW) == expected


def test_age_takes_a_naive_now_as_utc() -> None:
    assert age("2026-11-23T11:00:00Z", NOW.replace(tzinfo=None)) == "60m"


def test_age_defaults_to_the_current_time() -> None:
    created = dt.datetime.now(dt.UTC) - dt.timedelta(days=10, hours=1)
    assert age(created.strftime("%Y-%m-%dT%H:%M:%SZ")) == "10d"


# --- to_json -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({}, "{}\n"),
        ([], "[]\n"),
        (None, "null\n"),
        ("x", '"x"\n'),
        ({"b": 1, "a": {"d": [True, None], "c": {}}}, None),  # checked below
        ({"s": "<b>&</b>"}, '{\n    "s": "\\u003cb\\u003e\\u0026\\u003c/b\\u003e"\n}\n'),
        ({"s": "a\u2028b\u2029c"}, '{\n    "s": "a\\u2028b\\u2029c"\n}\n'),
        ({"s": "héllo 世界 😀"}, '{\n    "s": "héllo 世界 😀"\n}\n'),
        ({"s": 'q"\\'}, '{\n    "s": "q\\"\\\\"\n}\n'),
        ({"s": "\n\r\t\b\f\x01\x1f\x7f"}, '{\n    "s": "\\n\\r\\t\\b\\f\\u0001\\u001f\x7f"\n}\n'),
        ({"s": "bad\ud800"}, '{\n    "s": "bad\\ufffd"\n}\n'),
        ([1.0, 0.5, -0.0, 1e20, 1e21, 1e-6, 1.5e-7, 123456789.5], None),
        ((1, "a"), '[\n    1,\n    "a"\n]\n'),
    ],
)
def test_to_json_escapes_and_numbers_as_go(obj: Any, expected: str | None) -> None:
    if expected is not None:
        assert to_json(obj) == expected
    elif isinstance(obj, dict):
        assert to_json(obj) == (
            "{\n"
            '    "a": {\n'
            '        "c": {},\n'
            '        "d": [\n'
            "            true,\n"
            "            null\n"
            "        ]\n"
            "    },\n"
            '    "b": 1\n'
            "}\n"
        )
    else:
        assert to_json(obj).split() == [
            "[",
            "1,",
            "0.5,",
            "-0,",
            "100000000000000000000,",
            "1e+21,",
            "0.000001,",
            "1.5e-7,",
            "123456789.5",
            "]",
        ]


def test_to_json_of_an_empty_list_is_what_kubectl_prints() -> None:
    assert to_json(list_object([])) == (
        "{\n"
        '    "apiVersion": "v1",\n'
        '    "items": [],\n'
        '    "kind": "List",\n'
        '    "metadata": {\n'
        '        "resourceVersion": ""\n'
        "    }\n"
        "}\n"
    )


def test_to_json_of_a_profile_sorts_keys_at_every_level() -> None:
    text = to_json(profile("m", "True"))
    assert text.startswith('{\n    "apiVersion": "multicluster.x-k8s.io/v1alpha1",\n    "kind"')
    assert '"conditions": [\n            {\n                "reason": "Joined",' in text
    assert json.loads(text) == profile("m", "True")


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        ({"x": math.nan}, ValueError),
        ([math.inf], ValueError),
        ({1: "a"}, TypeError),
        ({"x": {1, 2}}, TypeError),
        (b"bytes", TypeError),
    ],
)
def test_to_json_rejects_what_json_cannot_hold(obj: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        to_json(obj)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def same(read: Any, written: Any) -> bool:
    """Equal, a float read back as an int (Go writes 1e16 as 10000000000000000) included."""
    if isinstance(written, float):
        return isinstance(read, int | float) and float(read) == written
    if isinstance(written, dict):
        return read.keys() == written.keys() and all(same(read[k], written[k]) for k in written)
    if isinstance(written, list):
        return len(read) == len(written) and all(map(same, read, written))
    return bool(read == written) and type(read) is type(written)


@given(json_values)
def test_to_json_reads_back_and_never_writes_html_characters(value: Any) -> None:
    text = to_json(value)
    assert same(json.loads(text), value)
    assert not {"<", ">", "&", "\u2028", "\u2029"} & set(text)
    assert text.endswith("\n")


# --- list_object -------------------------------------------------------------------------------


def test_list_object_wraps_items_in_a_v1_list() -> None:
    first, second = profile("a", "True"), profile("b", "False")
    listed = list_object(iter([first, second]))
    assert listed == {
        "apiVersion": "v1",
        "items": [first, second],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    assert listed["items"][0] is first


# --- to_yaml -----------------------------------------------------------------------------------


def test_to_yaml_of_a_list_is_what_kubectl_prints() -> None:
    listed = list_object([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}])
    assert to_yaml(listed) == (
        "apiVersion: v1\n"
        "items:\n"
        "- apiVersion: v1\n"
        "  kind: ConfigMap\n"
        "  metadata:\n"
        "    name: x\n"
        "kind: List\n"
        "metadata:\n"
        '  resourceVersion: ""\n'
    )


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"b": 1, "a": [1, 2]}, "a:\n- 1\n- 2\nb: 1\n"),
        ({"t": "2026-11-23T10:00:00Z"}, 't: "2026-11-23T10:00:00Z"\n'),
        ({"s": "True"}, 's: "True"\n'),
        ({"s": "true"}, 's: "true"\n'),
        ({"s": "yes"}, 's: "yes"\n'),
        ({"s": "y"}, 's: "y"\n'),
        ({"s": "8080"}, 's: "8080"\n'),
        ({"s": "1e3"}, 's: "1e3"\n'),
        ({"s": "0o17"}, 's: "0o17"\n'),
        ({"s": "1.5"}, 's: "1.5"\n'),
        ({"s": "null"}, 's: "null"\n'),
        ({"s": "~"}, 's: "~"\n'),
        ({"s": ""}, 's: ""\n'),
        ({"s": "- item"}, "s: '- item'\n"),
        ({"s": "key: value"}, "s: 'key: value'\n"),
        ({"s": "v1.34.1"}, "s: v1.34.1\n"),
        ({"s": "héllo 世界"}, "s: héllo 世界\n"),
        ({"s": "line1\nline2"}, "s: |-\n  line1\n  line2\n"),
        ({"s": "line1\nline2\n"}, "s: |\n  line1\n  line2\n"),
        ({"f": 3.0, "g": 1e6, "h": 0.5, "i": 1.5e-7, "j": 123456789.5}, None),
        ({"n": None, "t": True}, '"n": null\nt: true\n'),
        ({"empty": {}, "none": []}, "empty: {}\nnone: []\n"),
        ({"y": "x"}, '"y": x\n'),
        ({"s": "="}, "s: =\n"),
        ({"s": "<<"}, "s: <<\n"),
        ({"s": "!"}, "s: '!'\n"),
        ({"s": "on"}, 's: "on"\n'),
        ({"s": "1_000"}, 's: "1_000"\n'),
        ({"s": "0755"}, 's: "0755"\n'),
        ({"s": "-0b101"}, 's: "-0b101"\n'),
        ({"s": ".5"}, 's: ".5"\n'),
        ({"s": ".inf"}, 's: ".inf"\n'),
        ({"s": "0x10000000000000000"}, "s: 0x10000000000000000\n"),
        ({"s": "2026-11-23 10:00:00"}, 's: "2026-11-23 10:00:00"\n'),
        ({"s": "2026-11-23 10:00:00Z"}, "s: 2026-11-23 10:00:00Z\n"),
        ({"s": "2026-02-30"}, "s: 2026-02-30\n"),
        ({"s": "a \U0001f600\nb"}, 's: "a \\U0001F600\\nb"\n'),
        ({"s": "bom\ufeff"}, 's: "bom\\uFEFF"\n'),
        ({"s": "x \n"}, 's: "x \\n"\n'),
        ("scalar", "scalar\n"),
        (None, "null\n"),
        (7, "7\n"),
    ],
)
def test_to_yaml_writes_scalars_as_go_yaml(obj: Any, expected: str | None) -> None:
    if expected is None:
        expected = "f: 3\ng: 1000000\nh: 0.5\ni: 1.5e-07\nj: 1.234567895e+08\n"
    assert to_yaml(obj) == expected


WORDS = " ".join(["word"] * 40)

# `kubectl label --local -f obj.json zz=1 -o yaml` (kubectl v1.32) on this object.
TRICKY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "x", "labels": {"zz": "1"}},
    "data": {
        "node10": "a",
        "node9": "b",
        "a_b": "c",
        "aB": "d",
        "k01": "e",
        "k1": "f",
        "k001": "g",
    },
    "styles": {
        "bang": "!",
        "star": "*",
        "eq": "=",
        "base60": "1:20",
        "shortdate": "2026-1-2",
        "hex": "0x1F",
        "huge": "1e400",
        "emoji": "ok \U0001f600",
        "tab": "a\tb",
        "ls": "end\u2028",
        "merge": "<<",
        "plus": "+.5",
    },
    "empty": {"": 3},
    "long": WORDS,
    "longq": "\ttab " + " ".join(["word"] * 26) + "\nx",
}
TRICKY_BY_KUBECTL = (
    "apiVersion: v1\n"
    "data:\n"
    "  a_b: c\n"
    "  aB: d\n"
    "  k1: f\n"
    "  k01: e\n"
    "  k001: g\n"
    "  node9: b\n"
    "  node10: a\n"
    "empty:\n"
    '  "": 3\n'
    "kind: ConfigMap\n"
    "long: word word word word word word word word word word word word word word word word\n"
    "  word word word word word word word word word word word word word word word word\n"
    "  word word word word word word word word\n"
    'longq: "\\ttab word word word word word word word word word word word word word word\n'
    '  word word word word word word word word word word word word\\nx"\n'
    "metadata:\n"
    "  labels:\n"
    '    zz: "1"\n'
    "  name: x\n"
    "styles:\n"
    "  bang: '!'\n"
    '  base60: "1:20"\n'
    '  emoji: "ok \\U0001F600"\n'
    "  eq: =\n"
    '  hex: "0x1F"\n'
    "  huge: 1e400\n"
    "  ls: 'end\u2028'\n"
    "  merge: <<\n"
    '  plus: "+.5"\n'
    '  shortdate: "2026-1-2"\n'
    "  star: '*'\n"
    '  tab: "a\\tb"\n'
)


def test_to_yaml_is_byte_for_byte_what_kubectl_prints() -> None:
    assert to_yaml(TRICKY) == TRICKY_BY_KUBECTL


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["node10", "node9", "node1"], ["node1", "node9", "node10"]),
        (["aB", "a_b", "a-b", "ab"], ["a-b", "a_b", "aB", "ab"]),
        (["k01", "k1", "k001", "k2"], ["k1", "k01", "k001", "k2"]),
        (["v1beta1", "v1", "v10", "v1alpha1"], ["v1", "v10", "v1alpha1", "v1beta1"]),
        (["b", "a", "B", "é"], ["B", "a", "b", "é"]),
    ],
)
def test_to_yaml_orders_keys_as_go_yaml(keys: list[str], expected: list[str]) -> None:
    text = to_yaml(dict.fromkeys(keys, 0))
    assert [line.split(":")[0] for line in text.splitlines()] == expected


def test_to_yaml_folds_only_at_spaces() -> None:
    token = "x" * 200
    assert to_yaml({"t": token}) == f"t: {token}\n"
    assert to_yaml({"w": WORDS}).splitlines()[0] == "w: " + " ".join(["word"] * 16)


def test_to_yaml_writes_shared_values_out_in_full() -> None:
    shared = {"name": "same"}
    text = to_yaml({"a": shared, "b": shared})
    assert text == "a:\n  name: same\nb:\n  name: same\n"
    assert "&" not in text and "*" not in text


def test_to_yaml_writes_tuples_as_sequences() -> None:
    assert to_yaml({"xs": (1, "a")}) == "xs:\n- 1\n- a\n"


def test_to_yaml_rejects_nan() -> None:
    with pytest.raises(ValueError, match="unsupported value"):
        to_yaml({"x": math.nan})


yaml_chars = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), include_characters="\n")
yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(yaml_chars),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(yaml_chars), inner, max_size=4)
    ),
    max_leaves=20,
)


class GoYAMLLoader(yaml.SafeLoader):
    """Reads plain scalars as go-yaml v2 does (kubectl's readers are Go)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return printers._go_yaml_tag(value)
        return super().resolve(kind, value, implicit)


@given(yaml_values)
def test_to_yaml_reads_back(value: Any) -> None:
    assert same(yaml.load(to_yaml(value), Loader=GoYAMLLoader), value)


# --- relaxed_jsonpath --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("metadata.name", "{.metadata.name}"),
        (".metadata.name", "{.metadata.name}"),
        ("{metadata.name}", "{.metadata.name}"),
        ("{.metadata.name}", "{.metadata.name}"),
        ("{.items[*].metadata.name}", "{.items[*].metadata.name}"),
        ('status.conditions[?(@.type=="Joined")].status', None),
        ("", ""),
    ],
)
def test_relaxed_jsonpath_completes_a_path(expr: str, expected: str | None) -> None:
    if expected is None:
        expected = '{.status.conditions[?(@.type=="Joined")].status}'
    assert relaxed_jsonpath(expr) == expected


@pytest.mark.parametrize(
    "expr",
    [
        "{foo.bar",
        "foo.bar}",
        "{foo.bar}}",
        "{{foo.bar}",
        "{range .items[*]}{.metadata.name}{end}",
    ],
)
def test_relaxed_jsonpath_rejects_stray_braces(expr: str) -> None:
    with pytest.raises(JSONPathError, match="unexpected path string"):
        relaxed_jsonpath(expr)


# --- jsonpath ----------------------------------------------------------------------------------

DATA: dict[str, Any] = {
    "kind": "Thing",
    "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web", "tier": "front"}},
    "xs": [10, 20, 30, 40],
    "empty": [],
    "nums": [{"n": 1, "f": 1.5, "ok": True}, {"n": 2, "f": 2.5, "ok": False}, {"n": 3}],
    "none": None,
    "flag": False,
    "ratio": 0.25,
    "big": 1e6,
    "whole": 3.0,
    "count": 7,
    "html": {"s": "<a&b>"},
    "name": "top",
}

TWO = {"nums": DATA["nums"][:2]}  # both items have every key

JSONPATHS = [
    # text, fields, the current object
    ("plain text", DATA, "plain text"),
    ("kind={.kind}!", DATA, "kind=Thing!"),
    ("{.metadata.name}", DATA, "a"),
    ("{ .metadata.name }", DATA, "a"),
    ("{$.metadata.name}", DATA, "a"),
    ("{@.kind}", DATA, "Thing"),
    ("{@}", {"b": 1, "a": [True]}, '{"a":[true],"b":1}'),
    ("{}", "x", "x"),
    ("{.metadata.labels.app\\.kubernetes\\.io/name}", DATA, "web"),
    ("{.metadata['name']}", DATA, "a"),
    ("{.metadata.labels}", DATA, '{"app.kubernetes.io/name":"web","tier":"front"}'),
    ("{.html}", DATA, '{"s":"\\u003ca\\u0026b\\u003e"}'),
    ("{.html.s}", DATA, "<a&b>"),
    # how scalars print
    ("{.none}", DATA, "null"),
    ("{.flag}", DATA, "false"),
    ("{.nums[0].ok}", DATA, "true"),
    ("{.count}", DATA, "7"),
    ("{.ratio}", DATA, "0.25"),
    ("{.big}", DATA, "1e+06"),
    ("{.whole}", DATA, "3"),
    # arrays
    ("{.xs}", DATA, "[10,20,30,40]"),
    ("{.xs[*]}", DATA, "10 20 30 40"),
    ("{.xs[0]}", DATA, "10"),
    ("{.xs[-1]}", DATA, "40"),
    ("{.xs[-2]}", DATA, "30"),
    ("{.xs[1:3]}", DATA, "20 30"),
    ("{.xs[1:]}", DATA, "20 30 40"),
    ("{.xs[:2]}", DATA, "10 20"),
    ("{.xs[-2:]}", DATA, "30 40"),
    ("{.xs[::2]}", DATA, "10 30"),
    ("{.xs[0:0]}", DATA, ""),
    ("{.xs[0,2]}", DATA, "10 30"),
    ("{.xs[0, -1]}", DATA, "10 40"),
    ("{.empty[*]}", DATA, ""),
    ("{.empty[*].name}", DATA, ""),
    ("{.nums[*].n}", DATA, "1 2 3"),
    ("{.none[0]}", DATA, ""),
    # filters
    ("{.nums[?(@.n==2)].f}", DATA, "2.5"),
    ("{.nums[?(@.n>1)].n}", DATA, "2 3"),
    ("{.nums[?(@.n>=2)].n}", DATA, "2 3"),
    ("{.nums[?(@.n<2)].n}", DATA, "1"),
    ("{.nums[?(@.n<=2)].n}", DATA, "1 2"),
    ("{.nums[?(@.n!=2)].n}", DATA, "1 3"),
    ("{.nums[?(@.f>2.0)].n}", TWO, "2"),
    ("{.nums[?(@.ok==true)].n}", TWO, "1"),
    ("{.nums[?(@.f)].n}", DATA, "1 2"),
    ("{.nums[?(@.f == 1.5)].n}", TWO, "1"),
    ("{.nums[?(@.n==@.n)].n}", DATA, "1 2 3"),
    # literals
    ('{"\\n"}', DATA, "\n"),
    ('{"\\t"}', DATA, "\t"),
    ("{'it\\'s'}", DATA, "it's"),
    ('{"say \\"hi\\""}', DATA, 'say "hi"'),
    ('{"\\u00e9\\x41\\101\\\\x"}', DATA, "éAA\\x"),
    ('{"{}"}', DATA, "{}"),
    ("{.kind}{'-'}{.metadata.name}", DATA, "Thing-a"),
    ("{true}", DATA, "true"),
    ("{42}", DATA, "42"),
    # wildcard and recursive descent
    ("{.metadata.labels.*}", DATA, "web front"),
    ("{.name.*}", {"name": "ab"}, "97 98"),
    ("{..n}", DATA, "1 2 3"),
    ("{..name}", DATA, "top a"),
    # range
    ("{range .xs[*]}<{@}>{end}", DATA, "<10><20><30><40>"),
    ("{range .xs[1:3]}{@}{'\\n'}{end}done", DATA, "20\n30\ndone"),
    ("{range .nums[0:2]}[{range .*}{@};{end}]{end}", DATA, "[1;1.5;true;][2;2.5;false;]"),
    ("{range .empty[*]}{@}{end}after", DATA, "after"),
]


@pytest.mark.parametrize(("template", "obj", "expected"), JSONPATHS)
def test_jsonpath_prints_as_kubectl(template: str, obj: Any, expected: str) -> None:
    assert jsonpath(template, obj) == expected


def test_jsonpath_kubectl_range_over_cluster_profiles() -> None:
    template = (
        '{range .items[*]}{.metadata.name}{"\\t"}'
        '{.status.conditions[?(@.type=="ControlPlaneHealthy")].status}{"\\n"}{end}'
    )
    assert jsonpath(template, PROFILES) == "member-1\tTrue\nmember-2\tFalse\n"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.items[*].metadata.name}", "member-1 member-2"),
        ("{.items[0].metadata.name}", "member-1"),
        ("{.items[-1].metadata.name}", "member-2"),
        ("{.kind} {.metadata.resourceVersion}|", "List |"),
        ("{.items[0].metadata.labels.x-k8s\\.io/cluster-set}", "prod"),
        ("{.items[0].metadata.labels.a\\.b/c}", "dotted"),
        (
            '{.items[?(@.status.version.kubernetes=="v1.34.1")].spec.clusterManager.name}',
            "fleet-manager fleet-manager",
        ),
        ("{.items[?(@.metadata.labels)].metadata.name}", "member-1"),
        ('{.items[*].status.conditions[?(@.status!="True")].type}', "ControlPlaneHealthy"),
        (
            "{range .items[*]}{.metadata.name}:{range .status.conditions[*]}"
            " {.type}={.status}{end}{'\\n'}{end}",
            "member-1: Joined=True ControlPlaneHealthy=True\n"
            "member-2: Joined=True ControlPlaneHealthy=False\n",
        ),
        ("{.items[0].status.version}", '{"kubernetes":"v1.34.1"}'),
    ],
)
def test_jsonpath_over_a_list_of_cluster_profiles(template: str, expected: str) -> None:
    assert jsonpath(template, PROFILES) == expected


def test_jsonpath_on_one_profile_after_relaxing() -> None:
    one = PROFILES["items"][1]
    assert jsonpath(relaxed_jsonpath("spec.displayName"), one) == "member-2"
    assert jsonpath(relaxed_jsonpath(".metadata.namespace"), one) == "fleet"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{.missing}", "missing is not found"),
        ("{.metadata.missing}", "missing is not found"),
        ("{.none.x}", "x is not found"),
        ("{.xs.x}", "x is not found"),
        ("{.nums[*].f}", None),  # not every item has f, but one does: no error
        ("{.xs[4]}", "array index out of bounds: index 4, length 4"),
        ("{.xs[-5]}", "array index out of bounds: index -1, length 4"),
        ("{.xs[1:9]}", "array index out of bounds: index 8, length 4"),
        ("{.xs[3:1]}", "starting index 3 is greater than ending index 1"),
        ("{.xs[::0]}", "step must be > 0"),
        ("{.empty[0]}", "array index out of bounds: index 0, length 0"),
        ("{.kind[0]}", "string is not array or slice"),
        ("{.metadata[*]}", "map[string]interface {} is not array or slice"),
        ("{.count[0]}", "int64 is not array or slice"),
        ("{.metadata.labels[?(@.x)]}", "map[app.kubernetes.io/name:web tier:front] is not array"),
        ("{.none[?(@.x)]}", "<nil> is not array or slice and cannot be filtered"),
        ('{.nums[?(@.n=="1")]}', "incompatible types for comparison"),
        ("{.nums[?(@.n==1.0)]}", "incompatible types for comparison"),
        ("{.nums[?(@.ok<true)]}", "invalid type for comparison"),
        ("{.nums[?(@.f>1)]}", "incompatible types for comparison"),
        ("{.nums[?(@.n=1)]}", "unrecognized filter operator ="),
        ("{.nums[?(@.n==1)].n}", None),
        ("{.nums[?(@.f==1.5)]}", "f is not found"),  # the third item has no f
        ("{.nums[?(@.*==1)]}", "can only compare one element at a time"),
        ("{end}", "not in range, nothing to end"),
        ("{foo}", "unrecognized identifier foo"),
    ],
)
def test_jsonpath_evaluation_errors(template: str, message: str | None) -> None:
    if message is None:
        assert jsonpath(template, DATA)
        return
    with pytest.raises(JSONPathError, match=re.escape(message)) as caught:
        jsonpath(template, DATA)
    assert caught.value.template is None and caught.value.position is None


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.missing}", ""),
        ("a{.missing}b", "ab"),
        ("{.nums[?(@.f==1.5)].n}", "1"),
        ("{.items[*].metadata.name}", ""),
        ("{range .empty[*]}{.metadata.name}{end}ok", "ok"),
    ],
)
def test_jsonpath_allow_missing_keys_prints_nothing_for_them(template: str, expected: str) -> None:
    assert jsonpath(template, DATA, allow_missing_keys=True) == expected


def test_jsonpath_empty_range_body_still_reads_fields_as_client_go_does() -> None:
    with pytest.raises(JSONPathError, match="metadata is not found"):
        jsonpath("{range .empty[*]}{.metadata.name}{end}", DATA)


@pytest.mark.parametrize(
    ("template", "message", "position"),
    [
        ("{.a", "unclosed action", 3),
        ("x{.a\n}", "unclosed action", 4),
        ("{.xs[0}", "unterminated array", 7),
        ("ab{#}", "unrecognized character in action: U+0023 '#'", 3),
        ("{\t.a}", "unrecognized character in action: U+0009", 1),
        ('{"abc}', "unterminated quoted string", 6),
        ('{"\\q"}', 'unquote string "\\q" error invalid syntax', 1),
        ("{'\\\"'}", "unquote string '\\\"' error invalid syntax", 1),
        ('{"a\\\\"}', "unterminated quoted string", 7),  # client-go: a quote after \\ is escaped
        ("{.a[?(@.x}", "unterminated filter", 10),
        ("{.a[?(@.x)}", "unclosed array expect ]", 10),
        ("{.xs[a]}", "invalid array index a", 5),
        ("{.xs[-]}", "array index - is not a number", 5),
        ("{1.2.3}", "cannot parse number 1.2.3", 1),
        ("{....a}", "invalid multiple recursive descent", 3),
        ("{.xs[0,#]}", "invalid array index #", 7),
        ('{.a[?(@.x=="y" && #)]}', "unrecognized character in action: U+0026 '&'", 15),
    ],
)
def test_jsonpath_syntax_errors_name_template_and_position(
    template: str, message: str, position: int
) -> None:
    with pytest.raises(JSONPathError, match=re.escape(message)) as caught:
        jsonpath(template, DATA)
    error = caught.value
    assert error.template == template
    assert error.position == position
    assert template in str(error) and f"position {position}" in str(error)
    assert isinstance(error, ValueError)


def test_jsonpath_reuses_a_template_across_objects() -> None:
    template = "{.metadata.name}"
    names = [jsonpath(template, item) for item in PROFILES["items"]]
    assert names == ["member-1", "member-2"]
