"""The ExecCredential runner: run a credential plugin once and validate what it prints.

Follows client-go's exec authenticator (``plugin/pkg/client/auth/exec``):
the child gets the parent environment, then the exec config's ``env``, then
``KUBERNETES_EXEC_INFO``; interactive mode is always ``Never`` (stdin is /dev/null); stdout
must decode (JSON or YAML) to an ExecCredential of the configured version carrying a token or
a client certificate and key. Where client-go reads stdout and stderr sequentially or waits
forever, this reads both until the plugin exits, under a timeout, and kills the plugin's
process group. The plugin is started by ``vfork`` and ``exec`` (:mod:`._spawn`), never by
forking the caller: a runtime with a thousand members would copy its page tables for each run.
Neither stdout nor a credential ever appears in an error; stderr does, truncated.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cluster_inventory.credentials._providers import ExecConfig
from cluster_inventory.credentials._spawn import run_process
from cluster_inventory.credentials.errors import (
    ExecCredentialInvalid,
    ExecPluginFailed,
    ExecPluginNotFound,
    ExecPluginTimeout,
)

if TYPE_CHECKING:
    from cluster_inventory.shapes import RawExecCluster, RawExecCredential, RawExecCredentialSpec

__all__ = ["DEFAULT_EXEC_TIMEOUT", "ExecCredential", "exec_info", "run_exec_plugin"]

#: Seconds a plugin may run before it is killed.
DEFAULT_EXEC_TIMEOUT = 30.0
_STDERR_LIMIT = 512


@dataclass(frozen=True, kw_only=True)
class ExecCredential:
    """What a plugin returned (``ExecCredential.status``). ``repr`` shows no secret.

    Attributes:
        token: Bearer token, or None.
        client_certificate_data: PEM client certificate, or None.
        client_key_data: PEM client key, or None.
        expiration: ``expirationTimestamp`` (UTC), or None for "until the server refuses it".
    """

    token: str | None = field(default=None, repr=False)
    client_certificate_data: bytes | None = field(default=None, repr=False)
    client_key_data: bytes | None = field(default=None, repr=False)
    expiration: dt.datetime | None = None

    def expired(self, now: dt.datetime, skew: float = 0.0) -> bool:
        """True once ``now`` is within ``skew`` seconds of the expiration."""
        if self.expiration is None:
            return False
        return now >= self.expiration - dt.timedelta(seconds=skew)


def exec_info(config: ExecConfig, cluster: RawExecCluster | None) -> RawExecCredential:
    """The ``KUBERNETES_EXEC_INFO`` object for ``config`` (``spec.cluster`` only if asked)."""
    spec: RawExecCredentialSpec = {"interactive": False}
    if config.provide_cluster_info and cluster is not None:
        spec["cluster"] = {**cluster}
    return {"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec}


def _truncate(text: bytes) -> str:
    decoded = text.decode(errors="replace").strip()
    if len(decoded) > _STDERR_LIMIT:
        decoded = decoded[:_STDERR_LIMIT] + "... (truncated)"
    return decoded


async def run_exec_plugin(
    config: ExecConfig,
    *,
    cluster: RawExecCluster | None = None,
    provider: str = "",
    timeout: float = DEFAULT_EXEC_TIMEOUT,
) -> ExecCredential:
    """Run the plugin of ``config`` once and return its validated credential.

    Args:
        config: The exec config (profile-sourced args and env already applied).
        cluster: The ``spec.cluster`` object, sent when ``provideClusterInfo`` is true.
        provider: Access provider name, for errors and metrics.
        timeout: Seconds before the plugin is killed.

    Returns:
        The credential.

    Raises:
        ExecPluginNotFound: The executable is missing or not executable (with installHint).
        ExecPluginFailed: Non-zero exit; carries the exit code and truncated stderr.
        ExecPluginTimeout: The plugin ran longer than ``timeout``.
        ExecCredentialInvalid: stdout is not a valid ExecCredential (one reason per case).
    """
    env = dict(os.environ)
    env.update({e.name: e.value for e in config.env})
    env["KUBERNETES_EXEC_INFO"] = json.dumps(exec_info(config, cluster))
    try:
        done = await run_process(config.command, config.args, env=env, timeout=timeout)
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        raise ExecPluginNotFound(config.command, provider, config.install_hint) from None
    except TimeoutError:
        raise ExecPluginTimeout(config.command, provider, timeout) from None
    if done.returncode != 0:
        raise ExecPluginFailed(config.command, provider, done.returncode, _truncate(done.stderr))
    return parse_exec_output(done.stdout, config, provider)


def parse_exec_output(stdout: bytes, config: ExecConfig, provider: str = "") -> ExecCredential:
    """Validate a plugin's stdout as client-go's exec authenticator does.

    Raises:
        ExecCredentialInvalid: With ``reason`` saying which check failed.
    """

    def invalid(reason: str, message: str) -> ExecCredentialInvalid:
        return ExecCredentialInvalid(config.command, provider, reason, message)

    try:
        doc: Any = json.loads(stdout)
    except RecursionError:  # nested 1,000+ deep: no ExecCredential
        doc = None
    except (json.JSONDecodeError, UnicodeDecodeError):
        import yaml  # client-go's decoder accepts YAML too; rare, so imported late

        from cluster_inventory import _yaml

        try:
            doc = _yaml.load(stdout.decode())
        except (yaml.YAMLError, UnicodeDecodeError):
            doc = None
    if not isinstance(doc, Mapping):
        raise invalid("Decode", "stdout is not an ExecCredential object (JSON or YAML)")
    got = doc.get("apiVersion")
    if not got:
        raise invalid("APIVersion", "returned an object without apiVersion")
    if got != config.api_version:
        raise invalid(
            "APIVersion",
            f"is configured to use API version {config.api_version}, plugin returned "
            f"version {str(got)[:100]}",
        )
    if doc.get("kind") != "ExecCredential":
        raise invalid("Kind", f"returned kind {str(doc.get('kind'))[:100]!r}, not ExecCredential")
    status = doc.get("status")
    if not isinstance(status, Mapping):
        raise invalid("NoStatus", "didn't return a status field")
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if token is not None and not isinstance(token, str):
        raise invalid("Decode", "status.token is not a string")
    if (cert is None) != (key is None):
        raise invalid("CertWithoutKey", "returned only certificate or key, not both")
    if token is None and cert is None:
        raise invalid("NoCredential", "didn't return a token or cert/key pair")
    cert_bytes = key_bytes = None
    if cert is not None:
        if not isinstance(cert, str) or not isinstance(key, str):
            raise invalid("BadPEM", "clientCertificateData and clientKeyData must be strings")
        cert_bytes, key_bytes = cert.encode(), key.encode()
        _check_pem(cert_bytes, key_bytes, invalid)
    expiration = None
    raw_exp = status.get("expirationTimestamp")
    if raw_exp:
        try:
            expiration = dt.datetime.fromisoformat(str(raw_exp).replace("Z", "+00:00"))
        except ValueError:
            raise invalid(
                "BadExpiration", "status.expirationTimestamp is not an RFC 3339 time"
            ) from None
        if expiration.tzinfo is None:
            expiration = expiration.replace(tzinfo=dt.UTC)
    return ExecCredential(
        token=token,
        client_certificate_data=cert_bytes,
        client_key_data=key_bytes,
        expiration=expiration,
    )


def _check_pem(cert: bytes, key: bytes, invalid: Any) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        x509.load_pem_x509_certificate(cert)
    except ValueError:
        raise invalid("BadPEM", "failed parsing client certificate (not PEM)") from None
    try:
        load_pem_private_key(key, password=None)
    except (ValueError, TypeError):
        raise invalid("BadPEM", "failed parsing client key (not an unencrypted PEM key)") from None
