"""``cluster-inventory-secretreader``: the upstream secretreader contract, with expiry.

Reads the hub Secret ``<namespace>/<clusterName>`` (``clusterName`` from the profile's
``client.authentication.k8s.io/exec`` extension, delivered as ``spec.cluster.config``) and
prints an ExecCredential with ``status.token`` from the key ``token``, as upstream's plugin
does (SPEC.md 3.1), plus ``status.expirationTimestamp`` when the Secret records one under
``expirationTimestamp``, so that consumers refresh before the token lapses instead of after
a 401. Namespace: ``--namespace``, else ``$CLUSTER_INVENTORY_NAMESPACE``, else the hub
kubeconfig context's namespace, else ``$POD_NAMESPACE``, else the pod's service account
namespace, else ``default``. Hub: ``--kubeconfig``/``$KUBECONFIG`` (first file of the list),
else the in-cluster service account.

Only the standard library is imported (a cold start is paid on every fetch); a kubeconfig
in kubectl's YAML subset is read by a small parser, PyYAML only for anything else. Errors
go to stderr as ``[cluster-inventory-secretreader] <message>`` with exit code 1 and never
contain a token.
"""

from __future__ import annotations

import binascii
import json
import os
import socket
import ssl
import sys

TYPE_CHECKING = False  # typing costs a measurable share of a cold start
if TYPE_CHECKING:
    from typing import Any, NoReturn

NAME = "cluster-inventory-secretreader"
#: Secret key holding the bearer token (upstream ``SecretTokenKey``).
TOKEN_KEY = "token"  # noqa: S105 - a key name, not a secret
#: Secret key holding the token's expiry (RFC 3339), written by our cluster manager.
EXPIRATION_KEY = "expirationTimestamp"
_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_USAGE = f"""usage: {NAME} [--namespace NS] [--kubeconfig FILE] [--context NAME]

An exec credential plugin (client.authentication.k8s.io/v1 or v1beta1). It reads
KUBERNETES_EXEC_INFO, whose spec.cluster.config must hold {{"clusterName": ...}}, and prints an
ExecCredential with the token from the hub Secret <namespace>/<clusterName>, key "token".
"""


class PluginError(Exception):
    """A failure reported on stderr with exit code 1."""


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"[{NAME}] {message}\n")
    raise SystemExit(1)


def _parse_args(argv: list[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    names = {"-n": "namespace", "--namespace": "namespace", "--kubeconfig": "kubeconfig"}
    names["--context"] = "context"
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            sys.stdout.write(_USAGE)
            raise SystemExit(0)
        key, sep, value = arg.partition("=")
        if key not in names:
            raise PluginError(f"unknown argument {arg!r} (see --help)")
        if not sep:
            i += 1
            if i >= len(argv):
                raise PluginError(f"{key} needs a value")
            value = argv[i]
        opts[names[key]] = value
        i += 1
    return opts


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _b64decode(value: str) -> bytes:
    # binascii directly: the base64 module imports re, a few milliseconds of cold start.
    return binascii.a2b_base64(value.encode())


def _quote(segment: str) -> str:
    """Percent-encode one URL path segment (urllib.parse costs a measurable import)."""
    safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode()) for c in segment)


def _split_server(server: str) -> tuple[str, int, str]:
    """``https://host:port/prefix`` to (host, port, prefix)."""
    scheme, sep, rest = server.partition("://")
    if not sep or scheme != "https":
        raise PluginError(f"hub server {server!r} is not an https URL")
    hostport, _, prefix = rest.partition("/")
    if hostport.startswith("["):
        host, _, port_text = hostport[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = hostport.partition(":")
    try:
        port = int(port_text) if port_text else 443
    except ValueError:
        raise PluginError(f"hub server {server!r} has a bad port") from None
    return host, port, ("/" + prefix).rstrip("/")


def _load_document(path: str) -> Any:
    text = _read(path).decode()
    try:
        return json.loads(text)
    except ValueError:
        pass
    from cluster_inventory.credentials.plugins import _kubeconfig_yaml

    try:
        return _kubeconfig_yaml.load(text)
    except _kubeconfig_yaml.Unsupported:
        import yaml  # the full parser, only for kubeconfigs outside kubectl's subset

        return yaml.safe_load(text)


def _named(doc: Any, kind: str, name: str, source: str) -> dict[str, Any]:
    for item in doc.get(kind) or ():
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(kind[:-1])
            if isinstance(body, dict):
                return body
    raise PluginError(f"{source}: no {kind[:-1]} named {name!r}")


def _file_or_data(entry: dict[str, Any], key: str, base: str) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return _b64decode(str(data))
    path = entry.get(key)
    if path:
        return _read(os.path.join(base, str(path)))
    return None


def _https_get(
    host: str,
    port: int,
    path: str,
    headers: dict[str, str],
    *,
    context: ssl.SSLContext,
    server_name: str | None,
    timeout: float,
) -> tuple[int, bytes]:
    """One HTTP/1.0 GET over TLS; returns (status, body).

    http.client would pull in the email package, a large share of this plugin's cold start;
    HTTP/1.0 with ``Connection: close`` needs no chunked decoding or connection reuse.
    """
    lines = [f"GET {path} HTTP/1.0", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    with (
        socket.create_connection((host, port), timeout) as raw,
        context.wrap_socket(raw, server_hostname=server_name or host) as sock,
    ):
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    head, _, body = response.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise OSError("malformed HTTP response")
    return int(status_line[1]), body


class _Hub:
    """Where the hub is and how to authenticate to it."""

    def __init__(self, opts: dict[str, str]) -> None:
        self.namespace_hint: str | None = None
        self.token: str | None = None
        self.cert: bytes | None = None
        self.key: bytes | None = None
        self.tls_server_name: str | None = None
        self.insecure = False
        kubeconfig = opts.get("kubeconfig") or os.environ.get("KUBECONFIG", "")
        paths = [p for p in kubeconfig.split(os.pathsep) if p]
        if paths:
            self._from_kubeconfig(paths[0], opts.get("context"))
        else:
            self._from_service_account()

    def _from_kubeconfig(self, path: str, context: str | None) -> None:
        source = path
        try:
            doc = _load_document(path)
        except OSError as exc:
            raise PluginError(f"{source}: cannot read kubeconfig: {exc.strerror}") from None
        except Exception:  # any parser error means the same to the user
            raise PluginError(f"{source}: kubeconfig is neither JSON nor YAML") from None
        if not isinstance(doc, dict):
            raise PluginError(f"{source}: not a kubeconfig")
        ctx_name = context or doc.get("current-context")
        if not ctx_name:
            raise PluginError(f"{source}: no current-context and no --context")
        ctx = _named(doc, "contexts", ctx_name, source)
        cluster = _named(doc, "clusters", str(ctx.get("cluster")), source)
        user = _named(doc, "users", str(ctx.get("user")), source) if ctx.get("user") else {}
        if not cluster.get("server"):
            raise PluginError(f"{source}: cluster {ctx.get('cluster')!r} has no server")
        self.server = str(cluster["server"]).rstrip("/")
        base = os.path.dirname(os.path.abspath(path))
        try:
            self.ca = _file_or_data(cluster, "certificate-authority", base)
            self.cert = _file_or_data(user, "client-certificate", base)
            self.key = _file_or_data(user, "client-key", base)
            self.token = user.get("token")
            if not self.token and user.get("tokenFile"):
                self.token = _read(os.path.join(base, str(user["tokenFile"]))).decode().strip()
        except (OSError, ValueError) as exc:
            raise PluginError(f"{source}: cannot load TLS or token material: {exc}") from None
        if "exec" in user or "auth-provider" in user:
            raise PluginError(f"{source}: user {ctx.get('user')!r}: exec users are not supported")
        self.tls_server_name = cluster.get("tls-server-name")
        self.insecure = bool(cluster.get("insecure-skip-tls-verify"))
        self.namespace_hint = ctx.get("namespace") or None

    def _from_service_account(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise PluginError(
                "no hub: set --kubeconfig or KUBECONFIG, or run in a pod with a service account"
            )
        if ":" in host:
            host = f"[{host}]"
        self.server = f"https://{host}:{port}"
        try:
            self.token = _read(f"{_SA_DIR}/token").decode().strip()
            self.ca = _read(f"{_SA_DIR}/ca.crt")
        except OSError as exc:
            raise PluginError(f"in-cluster: cannot read {exc.filename}") from None

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self.ca.decode() if self.ca else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert and self.key:
            # load_cert_chain needs files: a private 0700 directory, a 0600 key file, both
            # removed at once (tempfile is not used: it costs more to import than this).
            base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
            tmp = os.path.join(base, f"ci-sr-{os.getpid()}-{os.urandom(8).hex()}")
            os.mkdir(tmp, 0o700)
            cert_path, key_path = os.path.join(tmp, "c"), os.path.join(tmp, "k")
            try:
                for path, data in ((cert_path, self.cert), (key_path, self.key)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(data)
                ctx.load_cert_chain(cert_path, key_path)
            finally:
                for path in (cert_path, key_path):
                    if os.path.exists(path):
                        os.unlink(path)
                os.rmdir(tmp)
        return ctx

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]:
        host, port, prefix = _split_server(self.server)
        headers = {"Accept": "application/json", "User-Agent": NAME}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        path = f"{prefix}/api/v1/namespaces/{_quote(namespace)}/secrets/{_quote(name)}"
        target = f"secret {namespace}/{name}"
        try:
            status, body = _https_get(
                host,
                port,
                path,
                headers,
                context=self.ssl_context(),
                server_name=self.tls_server_name,
                timeout=30,
            )
        except (OSError, ssl.SSLError) as exc:
            raise PluginError(f"failed to get {target}: hub {self.server}: {exc}") from None
        if status != 200:
            try:
                message = json.loads(body).get("message") or f"HTTP {status}"
            except ValueError:
                message = f"HTTP {status}"
            raise PluginError(f"failed to get {target}: {status} {message}")
        secret: dict[str, Any] = json.loads(body)
        return secret


def _namespace(opts: dict[str, str], hub: _Hub) -> str:
    for candidate in (
        opts.get("namespace"),
        os.environ.get("CLUSTER_INVENTORY_NAMESPACE"),
        hub.namespace_hint,
        os.environ.get("POD_NAMESPACE"),
    ):
        if candidate:
            return candidate
    try:
        return _read(f"{_SA_DIR}/namespace").decode().strip() or "default"
    except OSError:
        return "default"


def run(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> str:
    """Produce the ExecCredential JSON line for one invocation.

    Raises:
        PluginError: Bad input, an unreachable hub, or a missing Secret or key.
    """
    opts = _parse_args(argv)
    raw = environ.get("KUBERNETES_EXEC_INFO", "")
    if not raw:
        raise PluginError("KUBERNETES_EXEC_INFO env var is unset or empty")
    try:
        info = json.loads(raw)
    except ValueError:
        raise PluginError("KUBERNETES_EXEC_INFO is not JSON") from None
    api_version = info.get("apiVersion") if isinstance(info, dict) else None
    if api_version not in _API_VERSIONS or info.get("kind") != "ExecCredential":
        raise PluginError(
            f"KUBERNETES_EXEC_INFO: expected an ExecCredential of {' or '.join(_API_VERSIONS)}"
        )
    cluster = (info.get("spec") or {}).get("cluster")
    if not isinstance(cluster, dict) or not str(cluster.get("server") or "").strip():
        raise PluginError(
            "spec.cluster.server is missing in KUBERNETES_EXEC_INFO (set provideClusterInfo: true)"
        )
    config = cluster.get("config")
    if not isinstance(config, dict):
        raise PluginError("missing ExecCredential.Spec.Cluster.Config")
    cluster_name = config.get("clusterName")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise PluginError("missing clusterName in ExecCredential.Spec.Cluster.Config")
    hub = _Hub(opts)
    namespace = _namespace(opts, hub)
    data = hub.get_secret(namespace, cluster_name).get("data") or {}
    try:
        token = _b64decode(data.get(TOKEN_KEY) or "").decode().strip()
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise PluginError(
            f"secret {namespace}/{cluster_name}: key {TOKEN_KEY!r} is not text"
        ) from None
    if not token:
        raise PluginError(f'secret {namespace}/{cluster_name} missing "{TOKEN_KEY}" key')
    status: dict[str, str] = {"token": token}
    expiry = data.get(EXPIRATION_KEY)
    if expiry:
        try:
            status["expirationTimestamp"] = _b64decode(expiry).decode().strip()
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise PluginError(
                f"secret {namespace}/{cluster_name}: key {EXPIRATION_KEY!r} is not text"
            ) from None
    credential = {
        "kind": "ExecCredential",
        "apiVersion": api_version,
        "spec": {"interactive": False},
        "status": status,
    }
    return json.dumps(credential, separators=(",", ":"))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: print the ExecCredential or fail with exit code 1."""
    try:
        line = run(sys.argv[1:] if argv is None else argv, os.environ)
    except PluginError as exc:
        _fail(str(exc))
    sys.stdout.write(line + "\n")


if __name__ == "__main__":
    main()
