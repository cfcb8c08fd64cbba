"""One context of a parsed kubeconfig, checked field by field: :func:`from_document`.

Every refusal names the field it concerns (``clusters[name=hub].cluster.server``), and a
kubeconfig someone else wrote can be read with ``inline_only`` so that it never makes this
process read and send its own files.
"""

from __future__ import annotations

import binascii

from cluster_inventory.kubeconfig._files import _absolute, _read, _resolve_paths
from cluster_inventory.kubeconfig._model import Kubeconfig, KubeconfigError

TYPE_CHECKING = False  # the typing module would slow the plugin's cold start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["from_document"]


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
    # The seam from parsed YAML to the typed shapes: both were checked to be mappings above
    # (and the exec stanza's fields are checked where it runs).
    exec_entry: Any = exec_stanza
    named_extensions: tuple[Any, ...] = tuple(e for e in extensions if isinstance(e, dict))
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
        exec=exec_entry,
        cluster_extensions=named_extensions,
        namespace=ctx.get("namespace") or None,
    )
