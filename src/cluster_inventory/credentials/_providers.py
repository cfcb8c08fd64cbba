"""The consumer's provider file: which exec plugin serves which access provider.

The format is upstream's (``sigs.k8s.io/cluster-inventory-api/pkg/access``, KEP-5339):
``{"providers": [{"name", "execConfig", "profileSourcedCLIArgsPolicy",
"profileSourcedEnvVarsPolicy"}]}``. Like Go's ``encoding/json``, keys match case-insensitively;
unlike it, an unknown key or a bad value is an error naming the file and the field at load
time rather than a surprise at the first connection. YAML files are read too.
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.credentials.errors import ProviderConfigError

__all__ = [
    "EXEC_API_VERSIONS",
    "CLIArgsPolicy",
    "EnvVarsPolicy",
    "ExecConfig",
    "ExecEnvVar",
    "Provider",
    "ProviderConfig",
    "exec_config_from_dict",
    "load_provider_file",
]

#: ExecCredential versions an exec plugin may speak (client-go accepts exactly these).
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
P = TypeVar("P", bound=enum.StrEnum)


class CLIArgsPolicy(enum.StrEnum):
    """What to do with the profile's ``.../exec/additional-args`` extension."""

    APPEND = "Append"
    IGNORE = "Ignore"


class EnvVarsPolicy(enum.StrEnum):
    """What to do with the profile's ``.../exec/additional-envs`` extension."""

    APPEND_IF_NOT_EXISTS = "AppendIfNotExists"
    REPLACE = "Replace"
    IGNORE = "Ignore"


@dataclass(frozen=True, kw_only=True)
class ExecEnvVar:
    """One ``execConfig.env`` entry."""

    name: str
    value: str = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class ExecConfig:
    """How to run one exec credential plugin (kubeconfig ``users[].user.exec``).

    Attributes:
        command: Executable; a bare name is looked up on ``PATH``.
        args: Arguments.
        env: Extra environment variables (they win over the consumer's environment).
        api_version: ``client.authentication.k8s.io/v1`` or ``/v1beta1``.
        install_hint: Shown when the executable is missing.
        provide_cluster_info: Send ``spec.cluster`` in ``KUBERNETES_EXEC_INFO``.
        interactive_mode: As written in the file; the runner always uses ``Never``
            (``pkg/access`` forces it).
    """

    command: str
    args: tuple[str, ...] = ()
    env: tuple[ExecEnvVar, ...] = ()
    api_version: str = EXEC_API_VERSIONS[0]
    install_hint: str | None = None
    provide_cluster_info: bool = False
    interactive_mode: str | None = None

    def identity(self) -> dict[str, Any]:
        """Everything that decides which credential the plugin returns, as plain data."""
        return {
            "command": self.command,
            "args": list(self.args),
            "env": [[e.name, e.value] for e in self.env],
            "apiVersion": self.api_version,
            "provideClusterInfo": self.provide_cluster_info,
        }


@dataclass(frozen=True, kw_only=True)
class Provider:
    """One entry of ``providers``: an access provider name and the plugin that serves it."""

    name: str
    exec_config: ExecConfig | None
    cli_args_policy: CLIArgsPolicy = CLIArgsPolicy.IGNORE
    env_vars_policy: EnvVarsPolicy = EnvVarsPolicy.IGNORE


@dataclass(frozen=True, kw_only=True)
class ProviderConfig:
    """The whole provider file, providers in file order (the order decides preference).

    Attributes:
        providers: The providers.
        source: Where it was read from, for error messages.
    """

    providers: tuple[Provider, ...] = ()
    source: str = "<provider config>"

    def provider(self, name: str) -> Provider | None:
        """Return the first provider called ``name``, or None."""
        return next((p for p in self.providers if p.name == name), None)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<provider config>") -> ProviderConfig:
        """Validate decoded JSON or YAML.

        Raises:
            ProviderConfigError: A field is missing, unknown or invalid; names the field.
        """
        top = _fields(data, source, "", {"providers"})
        raw = top.get("providers")
        if raw is None:
            return cls(providers=(), source=source)
        if not isinstance(raw, list):
            raise ProviderConfigError(source, "providers", "must be a list")
        providers = tuple(_provider(item, source, f"providers[{i}]") for i, item in enumerate(raw))
        return cls(providers=providers, source=source)


def load_provider_file(path: str | os.PathLike[str]) -> ProviderConfig:
    """Read a provider file (JSON as upstream writes it, or YAML).

    Args:
        path: The file, e.g. the value of ``--clusterprofile-provider-file``.

    Returns:
        The validated configuration.

    Raises:
        ProviderConfigError: The file is unreadable, not JSON/YAML, or a field is invalid;
            the message names the file and the field.
    """
    source = str(path)
    try:
        text = read_text(path)
    except UnreadableFileError as exc:
        raise ProviderConfigError(source, "", exc.problem) from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise ProviderConfigError(source, "", "nested too deeply to be a provider file") from None
    except json.JSONDecodeError as json_exc:
        # JSON is the upstream format; YAML is the exception, so import it late.
        import yaml

        from cluster_inventory import _yaml

        try:
            data = _yaml.load(text)
        except yaml.YAMLError:
            raise ProviderConfigError(
                source,
                "",
                f"neither JSON nor YAML (JSON: {json_exc.msg} at line {json_exc.lineno})",
            ) from None
    if data is None:
        data = {}
    return ProviderConfig.from_dict(data, source=source)


def _fields(data: Any, source: str, where: str, known: set[str]) -> dict[str, Any]:
    """Map keys to their canonical spelling (case-insensitive, as Go's encoding/json)."""
    if not isinstance(data, Mapping):
        raise ProviderConfigError(source, where, "must be an object")
    canonical = {k.lower(): k for k in known}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = canonical.get(str(key).lower())
        if name is None:
            prefix = f"{where}." if where else ""
            allowed = ", ".join(sorted(known))
            # A key that is no plain word (a newline, a control character) is quoted, so the
            # error stays one line naming it.
            shown = str(key) if str(key).isprintable() and str(key).strip() else repr(key)
            raise ProviderConfigError(
                source, f"{prefix}{shown}", f"unknown field (known: {allowed})"
            )
        out[name] = value
    return out


def _string(value: Any, source: str, where: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise ProviderConfigError(source, where, "is required")
        return None
    if not isinstance(value, str):
        raise ProviderConfigError(source, where, f"must be a string, got {type(value).__name__}")
    return value


def _provider(data: Any, source: str, where: str) -> Provider:
    known = {"name", "execConfig", "profileSourcedCLIArgsPolicy", "profileSourcedEnvVarsPolicy"}
    raw = _fields(data, source, where, known)
    name = _string(raw.get("name"), source, f"{where}.name", required=True)
    assert name is not None
    args_policy = _policy(
        raw.get("profileSourcedCLIArgsPolicy"),
        CLIArgsPolicy,
        CLIArgsPolicy.IGNORE,
        source,
        f"{where}.profileSourcedCLIArgsPolicy",
    )
    env_policy = _policy(
        raw.get("profileSourcedEnvVarsPolicy"),
        EnvVarsPolicy,
        EnvVarsPolicy.IGNORE,
        source,
        f"{where}.profileSourcedEnvVarsPolicy",
    )
    exec_raw = raw.get("execConfig")
    exec_config = None if exec_raw is None else _exec(exec_raw, source, f"{where}.execConfig")
    return Provider(
        name=name,
        exec_config=exec_config,
        cli_args_policy=args_policy,
        env_vars_policy=env_policy,
    )


def _policy(value: Any, kind: type[P], default: P, source: str, where: str) -> P:
    text = _string(value, source, where)
    if text is None:
        return default
    try:
        return kind(text)
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ProviderConfigError(
            source, where, f"unsupported value {text!r} (one of: {allowed})"
        ) from None


def _str_list(value: Any, source: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ProviderConfigError(source, where, "must be a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ProviderConfigError(source, f"{where}[{i}]", "must be a string")
    return tuple(value)


def exec_config_from_dict(data: Any, *, source: str, where: str) -> ExecConfig:
    """An :class:`ExecConfig` from a kubeconfig ``users[].user.exec`` stanza (same keys).

    Raises:
        ProviderConfigError: A field is missing or invalid (names ``source`` and the field).
    """
    return _exec(data, source, where)


def _exec(data: Any, source: str, where: str) -> ExecConfig:
    known = {
        "command",
        "args",
        "env",
        "apiVersion",
        "installHint",
        "provideClusterInfo",
        "interactiveMode",
    }
    raw = _fields(data, source, where, known)
    command = _string(raw.get("command"), source, f"{where}.command", required=True)
    assert command is not None
    api_version = _string(raw.get("apiVersion"), source, f"{where}.apiVersion", required=True)
    if api_version not in EXEC_API_VERSIONS:
        raise ProviderConfigError(
            source,
            f"{where}.apiVersion",
            f"unsupported value {api_version!r} (one of: {', '.join(EXEC_API_VERSIONS)})",
        )
    mode = _string(raw.get("interactiveMode"), source, f"{where}.interactiveMode")
    if mode is not None and mode not in _INTERACTIVE_MODES:
        raise ProviderConfigError(
            source,
            f"{where}.interactiveMode",
            f"unsupported value {mode!r} (one of: {', '.join(_INTERACTIVE_MODES)})",
        )
    env_raw = raw.get("env")
    env: list[ExecEnvVar] = []
    if env_raw is not None:
        if not isinstance(env_raw, list):
            raise ProviderConfigError(source, f"{where}.env", "must be a list of {name, value}")
        for i, item in enumerate(env_raw):
            entry = _fields(item, source, f"{where}.env[{i}]", {"name", "value"})
            env_name = _string(entry.get("name"), source, f"{where}.env[{i}].name", required=True)
            value = entry.get("value", "")
            if not isinstance(value, str):
                raise ProviderConfigError(source, f"{where}.env[{i}].value", "must be a string")
            assert env_name is not None
            env.append(ExecEnvVar(name=env_name, value=value))
    provide = raw.get("provideClusterInfo", False)
    if provide is None:
        provide = False
    if not isinstance(provide, bool):
        raise ProviderConfigError(source, f"{where}.provideClusterInfo", "must be true or false")
    return ExecConfig(
        command=command,
        args=_str_list(raw.get("args"), source, f"{where}.args"),
        env=tuple(env),
        api_version=api_version,
        install_hint=_string(raw.get("installHint"), source, f"{where}.installHint"),
        provide_cluster_info=provide,
        interactive_mode=mode,
    )
