"""The bad-input campaign over an exec plugin's stdout: an ExecCredential, or one
ExecCredentialInvalid that never quotes the token it was given."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.credentials import ExecConfig, ExecCredentialInvalid, parse_exec_output
from tests.support.data.bad_input import (
    campaign,
    check_outcome,
    credential,
    garbage_texts,
    paths_in,
    set_at,
)
from tests.support.data.bad_input import hostile_values as values

CONFIG = ExecConfig(command="/bin/plugin", api_version="client.authentication.k8s.io/v1")


@st.composite
def plugin_outputs(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    token = draw(credential)
    doc: Any = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token, "expirationTimestamp": "2030-01-01T00:00:00Z"},
    }
    for _ in range(draw(st.integers(0, 3))):
        paths = paths_in(doc)
        if not paths:
            break
        try:
            set_at(doc, draw(st.sampled_from(paths)), draw(values), delete=draw(st.booleans()))
        except (KeyError, IndexError, TypeError):
            continue
    text = draw(st.one_of(st.just(json.dumps(doc)), garbage_texts))
    return text.encode(), [token]


@campaign(80)
@given(plugin_outputs())
def test_plugin_output_is_a_credential_or_names_the_check(case: tuple[bytes, list[str]]) -> None:
    stdout, secrets = case
    check_outcome(
        "exec plugin stdout",
        lambda: parse_exec_output(stdout, CONFIG, "secretreader"),
        ExecCredentialInvalid,
        field_of=lambda e: e.reason,
        names="exec plugin '/bin/plugin'",
        secrets=secrets,
    )


def test_deeply_nested_output_is_not_a_credential():
    # json.loads raised RecursionError out of the credential cache.
    try:
        parse_exec_output(b"[" * 100_000 + b"]" * 100_000, CONFIG, "secretreader")
    except ExecCredentialInvalid as exc:
        assert exc.reason == "Decode"
    else:
        raise AssertionError("a nested list is no ExecCredential")
