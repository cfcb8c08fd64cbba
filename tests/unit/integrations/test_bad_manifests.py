"""The bad-input campaign over ``apply`` manifests: objects, or one ManifestError naming the
file, the document and the field, in one line that quotes no value."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from cluster_inventory.integrations.delivery import Manifest, ManifestError, load_manifests
from tests.support.data.bad_input import campaign, check_outcome, manifest_texts


@campaign(80)
@given(manifest_texts())
def test_manifest_file_loads_or_names_file_and_field(
    tmp_path_factory: Any, case: tuple[str, list[str]]
) -> None:
    text, secrets = case
    path = tmp_path_factory.mktemp("manifests") / "app.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = check_outcome(
        "apply manifests",
        lambda: load_manifests([path]),
        ManifestError,
        field_of=lambda e: e.field,
        names=str(path),
        secrets=secrets,
    )
    if isinstance(result, list):
        for manifest in result:
            assert isinstance(manifest, Manifest)
            assert isinstance(manifest.name, str) and manifest.name
            assert manifest.namespace is None or isinstance(manifest.namespace, str)
            assert manifest.ref()


def test_yaml_error_in_a_secret_manifest_does_not_quote_the_line(tmp_path):
    # PyYAML's message shows the offending line: here, the password.
    path = tmp_path / "secret.yaml"
    path.write_text('kind: Secret\nstringData:\n  password: "Cr3dM4rkerPW\n')
    try:
        load_manifests([path])
    except ManifestError as exc:
        assert "Cr3dM4rker" not in str(exc)
        assert str(exc).startswith(f"{path}: not valid YAML at line 4, column 1: ")
        assert "quoted scalar at line 3, column 13" in str(exc)
        assert "\n" not in str(exc)
    else:
        raise AssertionError("an unterminated string is not YAML")
