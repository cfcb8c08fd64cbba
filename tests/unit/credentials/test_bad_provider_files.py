"""The bad-input campaign over provider files: one ProviderConfigError naming file and field."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.credentials import ProviderConfig, ProviderConfigError, load_provider_file
from tests.support.data.bad_input import (
    campaign,
    check_outcome,
    leaked,
    provider_file_texts,
    provider_files,
)

CAMPAIGN = campaign(80)


def _field(exc: ProviderConfigError) -> str:
    return exc.field or "(file)"


@CAMPAIGN
@given(provider_files())
def test_provider_document_is_valid_or_names_the_field(case: tuple[Any, list[str]]) -> None:
    doc, secrets = case
    result = check_outcome(
        "provider file (decoded)",
        lambda: ProviderConfig.from_dict(doc, source="providers.json"),
        ProviderConfigError,
        field_of=_field,
        names="providers.json",
        secrets=secrets,
    )
    if isinstance(result, ProviderConfig):
        for provider in result.providers:
            assert isinstance(provider.name, str) and provider.name
            assert not leaked(repr(provider), secrets)
            if provider.exec_config is not None:
                assert all(isinstance(a, str) for a in provider.exec_config.args)
                assert isinstance(provider.exec_config.provide_cluster_info, bool)


@CAMPAIGN
@given(
    text=st.one_of(
        provider_file_texts,
        provider_files().map(lambda c: json.dumps(c[0])),
        provider_files().map(lambda c: yaml.safe_dump(c[0], allow_unicode=True)),
    )
)
def test_provider_file_text_is_valid_or_names_the_file(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("providers") / "providers.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_outcome(
        "provider file (text)",
        lambda: load_provider_file(path),
        ProviderConfigError,
        field_of=_field,
        names=str(path),
    )


def test_deeply_nested_provider_file_is_an_error(tmp_path):
    # json.loads raised RecursionError (not a ProviderConfigError) past ~1,000 levels.
    path = tmp_path / "providers.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    try:
        load_provider_file(path)
    except ProviderConfigError as exc:
        assert str(path) in str(exc)
    else:
        raise AssertionError("a nested list is no provider file")
