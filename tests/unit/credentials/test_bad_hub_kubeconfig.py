"""The exec plugins' hub kubeconfig: a quoted boolean never turns TLS verification off."""

from __future__ import annotations

import pytest
import yaml

from cluster_inventory.credentials.plugins.hub import Hub, HubError


def _kubeconfig(tmp_path, insecure):
    path = tmp_path / "hub.yaml"
    cluster = {"server": "https://hub.example:6443", "insecure-skip-tls-verify": insecure}
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


@pytest.mark.parametrize("value", ["false", "no", 0])
def test_insecure_skip_tls_verify_of_another_type_is_an_error(tmp_path, value):
    # bool("false") is True: the plugin used to skip verification of the hub.
    with pytest.raises(HubError, match="insecure-skip-tls-verify must be true or false"):
        Hub({"kubeconfig": _kubeconfig(tmp_path, value)})


@pytest.mark.parametrize("value", [True, False])
def test_insecure_skip_tls_verify_as_a_boolean_is_honoured(tmp_path, value):
    assert Hub({"kubeconfig": _kubeconfig(tmp_path, value)}).insecure is value
