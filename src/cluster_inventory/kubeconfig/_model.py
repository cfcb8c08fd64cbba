"""What a kubeconfig context resolves to: :class:`Kubeconfig`, and the one error of loading it."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from cluster_inventory.shapes import RawExec, RawNamedExtension

__all__ = ["Kubeconfig", "KubeconfigError"]


class KubeconfigError(ValueError):
    """A kubeconfig cannot be loaded; the message names the file (or source) and the field."""


class Kubeconfig:
    """One context of a loaded configuration: where the server is and how to authenticate.

    Attributes:
        source: Where it came from: the file(s), ``in-cluster`` or ``kubeconfig`` for a
            mapping; used in messages.
        context: The context name (None in-cluster).
        cluster: The cluster name of the context.
        user: The user name of the context, if any.
        server: The API server URL.
        ca_data: PEM CA bundle, or None for the system trust store.
        tls_server_name: Name to verify the serving certificate against.
        insecure_skip_tls_verify: Skip verification of the serving certificate.
        proxy_url: The cluster's ``proxy-url`` (http, https or socks5), if any.
        disable_compression: The cluster's ``disable-compression``.
        token: Static bearer token (never in ``repr``).
        client_cert_data: PEM client certificate.
        client_key_data: PEM client key (never in ``repr``).
        exec: The user's ``exec`` stanza (a relative command path resolved against its
            file, as client-go does), or None.
        cluster_extensions: The cluster's ``extensions`` list (``client.authentication.k8s.io/exec``
            becomes the plugin's ``spec.cluster.config``).
        namespace: The context's namespace, or the pod's in-cluster.
    """

    __slots__ = _FIELDS = (
        "source",
        "context",
        "cluster",
        "user",
        "server",
        "ca_data",
        "tls_server_name",
        "insecure_skip_tls_verify",
        "proxy_url",
        "disable_compression",
        "token",
        "client_cert_data",
        "client_key_data",
        "exec",
        "cluster_extensions",
        "namespace",
    )
    _SECRET = ("token", "client_key_data", "exec")

    # A plain class, not a dataclass: importing dataclasses costs the exec plugin more than
    # the rest of its start-up.
    def __init__(
        self,
        *,
        source: str,
        server: str,
        context: str | None = None,
        cluster: str = "",
        user: str | None = None,
        ca_data: bytes | None = None,
        tls_server_name: str | None = None,
        insecure_skip_tls_verify: bool = False,
        proxy_url: str | None = None,
        disable_compression: bool = False,
        token: str | None = None,
        client_cert_data: bytes | None = None,
        client_key_data: bytes | None = None,
        exec: RawExec | None = None,
        cluster_extensions: tuple[RawNamedExtension, ...] = (),
        namespace: str | None = None,
    ) -> None:
        self.source = source
        self.server = server
        self.context = context
        self.cluster = cluster
        self.user = user
        self.ca_data = ca_data
        self.tls_server_name = tls_server_name
        self.insecure_skip_tls_verify = insecure_skip_tls_verify
        self.proxy_url = proxy_url
        self.disable_compression = disable_compression
        self.token = token
        self.client_cert_data = client_cert_data
        self.client_key_data = client_key_data
        self.exec = exec
        self.cluster_extensions = cluster_extensions
        self.namespace = namespace

    def __repr__(self) -> str:
        shown = (f"{k}={getattr(self, k)!r}" for k in self._FIELDS if k not in self._SECRET)
        return f"Kubeconfig({', '.join(shown)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Kubeconfig):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]
