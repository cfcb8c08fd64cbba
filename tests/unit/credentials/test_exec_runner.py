"""The runner against real subprocesses: small Python scripts standing in for plugins."""

import json
import sys
import textwrap

import pytest

from cluster_inventory.credentials import (
    ExecConfig,
    ExecCredentialInvalid,
    ExecEnvVar,
    ExecPluginFailed,
    ExecPluginNotFound,
    ExecPluginTimeout,
    run_exec_plugin,
)
from tests.support.data.certificates import TEST_CERT, TEST_KEY

SECRET = "s3cr3t-token-value"
V1 = "client.authentication.k8s.io/v1"


def plugin(tmp_path, body, api_version=V1, **kwargs):
    script = tmp_path / "plugin.py"
    script.write_text("import json, os, sys, time\n" + textwrap.dedent(body))
    return ExecConfig(
        command=sys.executable, args=(str(script),), api_version=api_version, **kwargs
    )


def credential(status, api_version=V1):
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})


async def test_token_and_expiry(tmp_path):
    config = plugin(
        tmp_path,
        f"print({credential({'token': SECRET, 'expirationTimestamp': '2030-01-02T03:04:05Z'})!r})",
    )
    cred = await run_exec_plugin(config)
    assert cred.token == SECRET
    assert cred.expiration is not None
    assert cred.expiration.isoformat() == "2030-01-02T03:04:05+00:00"
    assert SECRET not in repr(cred)


async def test_exec_info_env_and_cluster(tmp_path):
    config = plugin(
        tmp_path,
        f"""
        info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
        assert info["spec"]["interactive"] is False, info
        assert info["spec"]["cluster"]["config"] == {{"clusterName": "c1"}}, info
        assert os.environ["EXTRA"] == "yes"
        assert sys.stdin.read() == ""
        print({credential({"token": SECRET})!r})
        """,
        provide_cluster_info=True,
        env=(ExecEnvVar(name="EXTRA", value="yes"),),
    )
    cred = await run_exec_plugin(
        config, cluster={"server": "https://x", "config": {"clusterName": "c1"}}
    )
    assert cred.token == SECRET


async def test_cluster_info_withheld_unless_asked(tmp_path):
    config = plugin(
        tmp_path,
        f"""
        info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
        assert "cluster" not in info["spec"], info
        print({credential({"token": SECRET})!r})
        """,
    )
    assert (await run_exec_plugin(config, cluster={"server": "https://x"})).token == SECRET


async def test_yaml_output_accepted(tmp_path):
    config = plugin(
        tmp_path,
        f"print('apiVersion: {V1}\\nkind: ExecCredential\\nstatus:\\n  token: {SECRET}')",
    )
    assert (await run_exec_plugin(config)).token == SECRET


async def test_client_certificate_and_key(tmp_path):
    status = {"clientCertificateData": TEST_CERT.decode(), "clientKeyData": TEST_KEY.decode()}
    config = plugin(tmp_path, f"print({credential(status)!r})")
    cred = await run_exec_plugin(config)
    assert cred.client_certificate_data == TEST_CERT
    assert cred.token is None


async def test_missing_plugin_carries_install_hint():
    config = ExecConfig(
        command="/nonexistent/plugin", api_version=V1, install_hint="brew install plugin"
    )
    with pytest.raises(ExecPluginNotFound) as info:
        await run_exec_plugin(config, provider="p")
    assert info.value.install_hint == "brew install plugin"
    assert "brew install plugin" in str(info.value)


async def test_non_zero_exit_with_truncated_stderr(tmp_path):
    config = plugin(tmp_path, "sys.stderr.write('boom ' * 1000); print('TOKENLEAK'); sys.exit(3)")
    with pytest.raises(ExecPluginFailed) as info:
        await run_exec_plugin(config, provider="p")
    assert info.value.exit_code == 3
    assert "boom" in str(info.value)
    assert "truncated" in str(info.value)
    assert len(str(info.value)) < 1000
    assert "TOKENLEAK" not in str(info.value)


async def test_hang_is_killed_at_timeout(tmp_path):
    config = plugin(tmp_path, "time.sleep(60)")
    with pytest.raises(ExecPluginTimeout) as info:
        await run_exec_plugin(config, timeout=0.5)
    assert info.value.timeout == 0.5


async def test_chatty_stderr_does_not_deadlock(tmp_path):
    config = plugin(
        tmp_path,
        f"sys.stderr.write('x' * 1_000_000); sys.stderr.flush(); print({credential({'token': SECRET})!r})",
    )
    assert (await run_exec_plugin(config, timeout=10)).token == SECRET


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("not json {", "Decode"),
        (json.dumps({"kind": "ExecCredential", "status": {"token": SECRET}}), "APIVersion"),
        (
            credential({"token": SECRET}, api_version="client.authentication.k8s.io/v1beta1"),
            "APIVersion",
        ),
        (json.dumps({"apiVersion": V1, "kind": "Other", "status": {"token": SECRET}}), "Kind"),
        (json.dumps({"apiVersion": V1, "kind": "ExecCredential"}), "NoStatus"),
        (credential({}), "NoCredential"),
        (credential({"clientCertificateData": "x"}), "CertWithoutKey"),
        (credential({"clientCertificateData": "x", "clientKeyData": SECRET}), "BadPEM"),
        (credential({"token": SECRET, "expirationTimestamp": "soon"}), "BadExpiration"),
    ],
)
async def test_invalid_output_each_has_its_reason_and_no_secret(tmp_path, output, reason):
    config = plugin(tmp_path, f"sys.stdout.write({output!r})")
    with pytest.raises(ExecCredentialInvalid) as info:
        await run_exec_plugin(config)
    assert info.value.reason == reason
    assert SECRET not in str(info.value)
