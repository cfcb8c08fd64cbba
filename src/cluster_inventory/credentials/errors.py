"""One error type per way a consumer can fail to reach a member cluster.

Every error names the object and field it concerns (the provider file and key, the
ClusterProfile and access provider, the plugin command) and the problem, each as an attribute
so that no caller parses the message, and never carries a credential: plugin stdout is never
quoted, and plugin stderr is truncated before it is.
"""

from __future__ import annotations

__all__ = [
    "AccessNotPublished",
    "AccessProviderNotFound",
    "AccessResolutionError",
    "CredentialsError",
    "ExecCredentialInvalid",
    "ExecPluginError",
    "ExecPluginFailed",
    "ExecPluginNotFound",
    "ExecPluginTimeout",
    "ProviderConfigError",
]


class CredentialsError(Exception):
    """Base of every error raised by :mod:`cluster_inventory.credentials`."""


class ProviderConfigError(CredentialsError):
    """The provider file cannot be read or a field in it is invalid.

    Attributes:
        source: The file path (or ``"<provider config>"`` for in-memory data).
        field: Location of the bad field, e.g. ``providers[0].execConfig.apiVersion``
            (``""`` when the whole file is at fault).
        problem: What is wrong, e.g. ``is required``.
    """

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(f"{where}{problem}")


class AccessResolutionError(CredentialsError):
    """A ClusterProfile cannot be turned into access settings for this consumer.

    Attributes:
        profile: ``namespace/name`` of the ClusterProfile.
        field: The profile (or provider file) field at fault, e.g.
            ``status.accessProviders[name=secretreader].cluster.server``.
        problem: What is wrong with it, naming neither the profile nor the field (the
            message is ``ClusterProfile <profile>: <field>: <problem>``), so a caller that
            prints ``field`` and ``problem`` side by side says each once.
    """

    def __init__(
        self, profile: str, problem: str, *, field: str = "status.accessProviders"
    ) -> None:
        self.profile = profile
        self.field = field
        self.problem = problem
        super().__init__(f"ClusterProfile {profile}: {field}: {problem}")


class AccessProviderNotFound(AccessResolutionError):
    """No provider of the consumer's file is advertised by the profile (KEP-4322 pkg/access)."""


class AccessNotPublished(AccessProviderNotFound):
    """The profile advertises no access provider at all yet: its member has not joined.

    A cluster manager publishes ``status.accessProviders`` once it reaches the member, so a
    new profile is without them for a while. That is a normal transient (wait for the next
    update of the profile), not a misconfiguration; consumers report it as pending.
    """


class ExecPluginError(CredentialsError):
    """An exec credential plugin could not produce a credential.

    Attributes:
        command: The plugin command as configured.
        provider: The access provider name the plugin serves.
        problem: What went wrong, e.g. ``did not finish within 10 s; killed``.
    """

    def __init__(self, command: str, provider: str, message: str) -> None:
        self.command = command
        self.provider = provider
        self.problem = message
        super().__init__(f"exec plugin {command!r} (provider {provider!r}): {message}")


class ExecPluginNotFound(ExecPluginError):
    """The plugin executable does not exist or cannot be run.

    Attributes:
        install_hint: The provider's ``installHint``, if it has one.
    """

    def __init__(self, command: str, provider: str, install_hint: str | None) -> None:
        self.install_hint = install_hint
        hint = f"; {install_hint.strip()}" if install_hint and install_hint.strip() else ""
        super().__init__(command, provider, f"executable not found{hint}")


class ExecPluginFailed(ExecPluginError):
    """The plugin exited with a non-zero code.

    Attributes:
        exit_code: The process exit code.
        stderr: The plugin's stderr, truncated to a few hundred characters.
    """

    def __init__(self, command: str, provider: str, exit_code: int, stderr: str) -> None:
        self.exit_code = exit_code
        self.stderr = stderr
        detail = f": {stderr}" if stderr else ""
        super().__init__(command, provider, f"failed with exit code {exit_code}{detail}")


class ExecPluginTimeout(ExecPluginError):
    """The plugin did not finish within the timeout and was killed.

    Attributes:
        timeout: The limit in seconds.
    """

    def __init__(self, command: str, provider: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(command, provider, f"did not finish within {timeout:g} s; killed")


class ExecCredentialInvalid(ExecPluginError):
    """The plugin's stdout is not a valid ExecCredential (client-go's exec checks).

    Attributes:
        reason: A short machine-readable reason: ``Decode``, ``APIVersion``, ``Kind``,
            ``NoStatus``, ``NoCredential``, ``CertWithoutKey``, ``BadPEM``, ``BadExpiration``.
    """

    def __init__(self, command: str, provider: str, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(command, provider, message)
