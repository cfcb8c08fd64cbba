"""The one kubeconfig loader, with kubectl's rules, on the standard library only.

Every command, the runtime, the cluster manager and the exec plugin find their hub here, so
that they agree with each other and with kubectl, client-go and controller-runtime
(``config.GetConfig``) on where a configuration comes from:

1. an explicit path (``--kubeconfig``): that file alone, which must exist;
2. else every path of ``$KUBECONFIG`` (``os.pathsep``-separated, empty entries and
   duplicates dropped, missing files skipped), merged as clientcmd merges them: a cluster,
   user or context name and ``current-context`` are taken from the first file that sets
   them, and relative file references are resolved against the file that holds them;
3. else the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``PORT`` and
   ``/var/run/secrets/kubernetes.io/serviceaccount``);
4. else ``~/.kube/config``.

The chosen context (``--context``, else ``current-context``) gives a :class:`Kubeconfig`:
server, TLS material (``*-data`` or files), ``tls-server-name``,
``insecure-skip-tls-verify``, ``proxy-url`` (http, https or socks5), token or token file,
client certificate, or an exec user (``users[].user.exec``, run by
:mod:`cluster_inventory.credentials`). ``auth-provider`` users are refused: client-go
removed the in-tree providers in 1.26.

This package imports nothing but the standard library (the exec plugin pays a cold start on
every credential fetch): JSON, then kubectl's YAML subset by a small parser, PyYAML only for
anything else.
"""

from __future__ import annotations

import binascii
import json
import os

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "IN_CLUSTER_DIR",
    "Kubeconfig",
    "KubeconfigError",
    "from_document",
    "in_cluster",
    "load",
    "load_merged",
    "search_paths",
]

#: Where a pod's service account token, CA and namespace are mounted.
IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_KINDS = ("clusters", "users", "contexts")
_PATH_KEYS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


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
        exec: Mapping[str, Any] | None = None,
        cluster_extensions: tuple[Mapping[str, Any], ...] = (),
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


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for JSON
        pass
    from cluster_inventory import _yaml

    try:
        return _yaml.load_block(text)
    except _yaml.Unsupported:
        pass
    import yaml  # the full parser, only for files outside kubectl's subset

    try:
        return _yaml.load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{source}: {_yaml.describe(exc)}") from None


def search_paths(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[str] | None:
    """The files kubectl would read, in precedence order, or None for "try in-cluster".

    Args:
        explicit: ``--kubeconfig``.
        environ: The environment (default ``os.environ``).

    Returns:
        ``[explicit]``; else the ``$KUBECONFIG`` list (without empty entries and
        duplicates); else None when ``$KUBECONFIG`` is unset or empty (the caller tries the
        in-cluster config, then ``~/.kube/config``).
    """
    if explicit:
        return [os.fspath(explicit)]
    env = os.environ if environ is None else environ
    paths: list[str] = []
    for entry in (env.get("KUBECONFIG") or "").split(os.pathsep):
        if entry and entry not in paths:
            paths.append(entry)
    return paths or None


def _absolute(value: Any, base: str) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return os.path.normpath(os.path.join(base, value))  # cleaned, as Go's filepath.Join
    return value


def _resolve_paths(kind: str, body: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A copy of ``body`` with its file references made absolute (clientcmd's rule)."""
    out = dict(body)
    for key in _PATH_KEYS.get(kind, ()):
        if key in out:
            out[key] = _absolute(out[key], base)
    exec_stanza = out.get("exec")
    if kind == "users" and isinstance(exec_stanza, dict):
        command = exec_stanza.get("command")
        # Only a command with a path separator is a file reference; a bare name uses PATH.
        if isinstance(command, str) and os.sep in command:
            out["exec"] = {**exec_stanza, "command": _absolute(command, base)}
    return out


def load_merged(paths: list[str], *, required: bool = False) -> tuple[dict[str, Any], str]:
    """Read and merge ``paths`` as clientcmd does.

    Args:
        paths: Files in precedence order.
        required: A missing file is an error (an explicit ``--kubeconfig``); otherwise it
            is skipped, as a missing ``$KUBECONFIG`` entry is.

    Returns:
        (the merged ``kind: Config`` mapping, a description of the files read). The mapping
        is empty when no file exists.

    Raises:
        KubeconfigError: A file is unreadable, not JSON or YAML, or not a mapping.
    """
    merged: dict[str, Any] = {kind: {} for kind in _KINDS}
    current: str | None = None
    read: list[str] = []
    for path in paths:
        try:
            text = _read(path).decode()
        except FileNotFoundError:
            if required:
                raise KubeconfigError(f"{path}: cannot read: no such file") from None
            continue
        except OSError as exc:
            raise KubeconfigError(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise KubeconfigError(f"{path}: not UTF-8 text") from None
        doc = _parse(text, path)
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise KubeconfigError(f"{path}: not a kubeconfig mapping")
        read.append(path)
        base = os.path.dirname(os.path.abspath(path))
        for kind in _KINDS:
            items = doc.get(kind) or []
            if not isinstance(items, list):
                raise KubeconfigError(f"{path}: {kind} must be a list")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise KubeconfigError(f"{path}: every entry of {kind} needs a name")
                body = item.get(kind[:-1])
                if not isinstance(body, dict):
                    name = item["name"]
                    raise KubeconfigError(f"{path}: {kind}[name={name}].{kind[:-1]} is missing")
                # The first file to define a name wins; later ones never change it.
                merged[kind].setdefault(item["name"], (_resolve_paths(kind, body, base), path))
        if current is None and doc.get("current-context"):
            current = str(doc["current-context"])
    document: dict[str, Any] = {
        kind: [{"name": name, kind[:-1]: body} for name, (body, _) in merged[kind].items()]
        for kind in _KINDS
    }
    if current is not None:
        document["current-context"] = current
    return document, os.pathsep.join(read)


def _named(doc: Mapping[str, Any], kind: str, name: str, source: str) -> dict[str, Any]:
    items = doc.get(kind) or []
    if not isinstance(items, list):
        raise KubeconfigError(f"{source}: {kind} must be a list")
    for item in items:
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(kind[:-1])
            if not isinstance(body, dict):
                raise KubeconfigError(f"{source}: {kind}[name={name}].{kind[:-1]} is missing")
            return body
    raise KubeconfigError(f"{source}: no entry named {name!r} in {kind}")


def _b64(value: Any, where: str) -> bytes:
    try:
        # binascii directly: the base64 module imports re (plugin cold start).
        return binascii.a2b_base64(str(value).encode(), strict_mode=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{where} is not valid base64") from None


def _data_or_file(entry: Mapping[str, Any], key: str, base: str | None, where: str) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return _b64(data, f"{where}.{key}-data")
    path = entry.get(key)
    if path:
        resolved = str(path) if base is None else str(_absolute(str(path), base))
        try:
            return _read(resolved)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            problem = getattr(exc, "strerror", None) or "not a file name"
            raise KubeconfigError(f"{where}.{key}: cannot read {resolved}: {problem}") from None
    return None


def from_document(
    doc: Mapping[str, Any],
    *,
    context: str | None = None,
    source: str = "kubeconfig",
    base_dir: str | None = None,
    inline_only: bool = False,
) -> Kubeconfig:
    """The chosen context of a parsed (or merged) kubeconfig.

    Args:
        doc: A ``kind: Config`` mapping.
        context: The context to use; defaults to ``current-context``.
        source: Name of the configuration in messages.
        base_dir: Directory that relative file references are resolved against (None: as
            given; a merged document has them resolved already).
        inline_only: Refuse file references (a kubeconfig someone else wrote must not make
            this process read and send its own files, such as its service account token).

    Returns:
        The connection settings of that context.

    Raises:
        KubeconfigError: No context is chosen, a named entry is missing, the server is
            missing, base64 or a referenced file is bad, a client certificate comes without
            its key, or the user is an ``auth-provider``; the message names the field.
    """
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise KubeconfigError(f"{source}: current-context is empty and no context was given")
    ctx = _named(doc, "contexts", str(ctx_name), source)
    cluster_name = str(ctx.get("cluster") or "")
    cluster = _named(doc, "clusters", cluster_name, source)
    user_name = ctx.get("user") or None
    user = _named(doc, "users", str(user_name), source) if user_name else {}
    where_c = f"{source}: clusters[name={cluster_name}].cluster"
    where_u = f"{source}: users[name={user_name}].user"
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"{where_c}.server is missing")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"{where_c}.server must be an https:// or http:// URL")
    for entry, where, text_field in (
        (cluster, where_c, "tls-server-name"),
        (cluster, where_c, "proxy-url"),
        (user, where_u, "token"),
        (ctx, f"{source}: contexts[name={ctx_name}].context", "namespace"),
    ):
        if entry.get(text_field) is not None and not isinstance(entry[text_field], str):
            raise KubeconfigError(f"{where}.{text_field} must be a string")
    if inline_only:
        for entry, where, file_field, inline in (
            (cluster, where_c, "certificate-authority", "certificate-authority-data"),
            (user, where_u, "tokenFile", "token"),
            (user, where_u, "client-certificate", "client-certificate-data"),
            (user, where_u, "client-key", "client-key-data"),
        ):
            if entry.get(file_field) and not entry.get(inline):
                raise KubeconfigError(
                    f"{where}.{file_field}: a file reference is not allowed here; use {inline} "
                    "(kubectl config view --flatten --minify inlines the files)"
                )
    if "auth-provider" in user:
        raise KubeconfigError(
            f"{where_u}.auth-provider: not supported (client-go removed the in-tree auth "
            "providers; use an exec plugin)"
        )
    exec_stanza = user.get("exec")
    if exec_stanza is not None and not isinstance(exec_stanza, dict):
        raise KubeconfigError(f"{where_u}.exec must be a mapping")
    if exec_stanza is not None and base_dir is not None:
        exec_stanza = _resolve_paths("users", {"exec": exec_stanza}, base_dir)["exec"]
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token_path = str(user["tokenFile"])
        if base_dir is not None:
            token_path = str(_absolute(token_path, base_dir))
        try:
            token = _read(token_path).decode().strip()
        except (OSError, ValueError):
            raise KubeconfigError(f"{where_u}.tokenFile: cannot read {token_path}") from None
    cert = _data_or_file(user, "client-certificate", base_dir, where_u)
    key = _data_or_file(user, "client-key", base_dir, where_u)
    if (cert is None) != (key is None):
        raise KubeconfigError(f"{where_u}: client-certificate and client-key must come together")
    extensions = cluster.get("extensions") or []
    if not isinstance(extensions, list):
        raise KubeconfigError(f"{where_c}.extensions must be a list")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        # bool("false") is True: a quoted value must not turn verification off.
        raise KubeconfigError(f"{where_c}.insecure-skip-tls-verify must be true or false")
    return Kubeconfig(
        source=source,
        context=str(ctx_name),
        cluster=cluster_name,
        user=str(user_name) if user_name else None,
        server=str(server),
        ca_data=_data_or_file(cluster, "certificate-authority", base_dir, where_c),
        tls_server_name=cluster.get("tls-server-name") or None,
        insecure_skip_tls_verify=insecure,
        proxy_url=cluster.get("proxy-url") or None,
        disable_compression=bool(cluster.get("disable-compression", False)),
        token=str(token) if token else None,
        client_cert_data=cert,
        client_key_data=key,
        exec=exec_stanza,
        cluster_extensions=tuple(e for e in extensions if isinstance(e, dict)),
        namespace=ctx.get("namespace") or None,
    )


def in_cluster(environ: Mapping[str, str] | None = None) -> Kubeconfig | None:
    """The pod's own configuration, or None outside a pod.

    As client-go's ``rest.InClusterConfig``: ``https://$KUBERNETES_SERVICE_HOST:PORT``, the
    mounted token and CA, and the mounted namespace.

    Raises:
        KubeconfigError: The variables are set but the token or CA cannot be read.
    """
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST")
    port = env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    try:
        token = _read(f"{IN_CLUSTER_DIR}/token").decode().strip()
        ca = _read(f"{IN_CLUSTER_DIR}/ca.crt")
    except OSError as exc:
        raise KubeconfigError(f"in-cluster config: cannot read {exc.filename}") from None
    try:
        namespace: str | None = _read(f"{IN_CLUSTER_DIR}/namespace").decode().strip() or None
    except OSError:
        namespace = None
    if ":" in host:
        host = f"[{host}]"
    return Kubeconfig(
        source="in-cluster",
        server=f"https://{host}:{port}",
        ca_data=ca,
        token=token,
        namespace=namespace,
    )


def load(
    path: str | os.PathLike[str] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
) -> Kubeconfig:
    """Find and load the configuration kubectl would use (the rules of this module's doc).

    Args:
        path: ``--kubeconfig``; when given, only that file is read and it must exist.
        context: ``--context``; defaults to the merged ``current-context``.
        environ: The environment (default ``os.environ``): ``KUBECONFIG``,
            ``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``.
        home: The home directory (default ``~``) for ``~/.kube/config``.

    Returns:
        The chosen context's settings.

    Raises:
        KubeconfigError: No configuration is found, or the one found is invalid (the message
            names the file and field).
    """
    paths = search_paths(path, environ)
    if paths is not None:
        doc, read = load_merged(paths, required=path is not None)
        if read:
            return from_document(doc, context=context, source=read)
        env_paths = os.pathsep.join(paths)
    pod = in_cluster(environ)
    if pod is not None:
        return pod
    default = os.path.join(home or os.path.expanduser("~"), ".kube", "config")
    doc, read = load_merged([default])
    if read:
        return from_document(doc, context=context, source=read)
    searched = f"$KUBECONFIG ({env_paths}: no such file), " if paths is not None else ""
    raise KubeconfigError(
        f"no configuration found: tried {searched}the in-cluster service account "
        f"(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set) and {default}; "
        "pass --kubeconfig or set KUBECONFIG"
    )
