"""Typed-enough access to any resource: get, create, delete and server-side apply.

Everything the project writes goes through :func:`apply` with a fixed field manager, so
ownership of fields is tracked by the API server (KEP-555 server-side apply) and a write that
changes nothing is a no-op on the server. Calls go through ``ApiClient.call_api`` with paths
built from a :class:`Resource`, which serves built-in kinds and custom resources alike, and
every ``ApiException`` becomes the matching :mod:`cluster_inventory.kube.errors` type.
"""

from __future__ import annotations

import functools
import json
import re
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote

import aiohttp

from cluster_inventory.kube._k8s import ApiClient, ApiException
from cluster_inventory.kube._timeout import request_timeout
from cluster_inventory.kube.errors import (
    CertificateError,
    KubeAPIError,
    RequestTimeoutError,
    ServerUnavailableError,
    error_from_status,
)

__all__ = [
    "FieldValidation",
    "Resource",
    "apply",
    "create",
    "delete",
    "get",
    "get_text",
    "list_objects",
    "list_pages",
    "replace_status",
    "request",
]

APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
#: What JSON leaves raw and YAML reads otherwise: DEL, the C1 controls, U+FFFE and U+FFFF
#: it refuses (``c-printable``); NEL, U+2028 and U+2029 it reads as line breaks (a space
#: inside a quoted string). Only ever inside a JSON string, where ``\\uXXXX`` means the same
#: to both.
_YAML_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")
JSON_PATCH_CONTENT_TYPE = "application/json-patch+json"
#: The ``fieldValidation`` directives of a write (KEP-2885, server-side field validation).
FieldValidation = Literal["Ignore", "Warn", "Strict"]
_OBJECT_RESPONSES = {200: "object", 201: "object", 202: "object"}


@dataclass(frozen=True, kw_only=True)
class Resource:
    """A REST resource: group, version, plural and scope.

    Attributes:
        group: API group, ``""`` for the core group.
        version: API version, e.g. ``v1alpha1``.
        plural: Resource name, e.g. ``clusterprofiles``.
        kind: Kind, e.g. ``ClusterProfile`` (used in messages and for apply bodies).
        namespaced: Whether objects live in namespaces.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """Return the URL path of the collection or of one object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        return base

    def describe(self, namespace: str | None, name: str | None) -> str:
        """Human-readable target, e.g. ``ClusterProfile team-a/c1``."""
        if not name:
            return f"{self.kind} list" + (f" in {namespace}" if namespace else "")
        return f"{self.kind} {namespace}/{name}" if namespace else f"{self.kind} {name}"


async def request(
    client: ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    query: Mapping[str, str | int | bool] | None = None,
    content_type: str = "application/json",
    target: str = "",
    timeout: float | None = None,
    accept: str = "application/json",
) -> Any:
    """Send one request and return the decoded JSON body.

    Args:
        client: The API client.
        method: HTTP method.
        path: URL path starting with ``/``.
        body: JSON-serialisable body.
        query: Query parameters (booleans become ``true``/``false``).
        content_type: Request content type.
        target: What the call acts on, for error messages.
        timeout: Total request timeout in seconds (a silent server must not hang a caller);
            None for :func:`request_timeout`.
        accept: The ``Accept`` header (the informer asks for ``PartialObjectMetadataList``).

    Returns:
        The decoded JSON response (dict), or None for an empty body.

    Raises:
        KubeAPIError: The server answered with an error (subclass per kind).
        ServerUnavailableError: The server could not be reached.
    """
    if timeout is None:
        timeout = request_timeout()
    params = [
        (k, ("true" if v else "false") if isinstance(v, bool) else v)
        for k, v in (query or {}).items()
    ]
    payload = body
    if body is not None and content_type == APPLY_CONTENT_TYPE:
        # The server parses apply bodies as YAML, which refuses the \uXXXX surrogate pairs that
        # json.dumps writes for characters outside the BMP: send raw UTF-8 instead. The
        # charset parameter also keeps the library from re-encoding the bytes. What YAML
        # refuses raw (DEL, C1 controls) is escaped (json.dumps escapes C0 already): a value
        # a member reported (a property, a message) is stored, not a 400 and a retry loop.
        payload = _YAML_UNPRINTABLE.sub(_escape, json.dumps(body, ensure_ascii=False)).encode()
        content_type = f"{APPLY_CONTENT_TYPE}; charset=utf-8"
    try:
        return await client.call_api(
            path,
            method,
            query_params=params,
            header_params={"Content-Type": content_type, "Accept": accept},
            body=payload,
            auth_settings=["BearerToken"],
            response_types_map=_OBJECT_RESPONSES,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
    except ApiException as exc:
        error = error_from_status(
            exc.status or 0, exc.body, http_reason=exc.reason or "", target=target
        )
        raise _redacted(error, body) from None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise _unreachable_error(client, exc, target, timeout) from None


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _unreachable_error(
    client: ApiClient, exc: BaseException, target: str, timeout: float
) -> ServerUnavailableError:
    """Map a transport failure to :class:`CertificateError` or :class:`ServerUnavailableError`.

    A timeout says how long we waited (its own text is empty); anything else says what
    failed, e.g. ``ProxyConnectionError: Could not connect to proxy 127.0.0.1:1080``.
    """
    host = client.configuration.host
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return CertificateError(
            status=0,
            reason="CertificateInvalid",
            message=f"{host}: TLS verification failed: {exc}",
            target=target,
        )
    if isinstance(exc, TimeoutError):
        what = f"no answer within {timeout:g} s" if not str(exc) else f"TimeoutError: {exc}"
        return RequestTimeoutError(
            status=0, reason="Unreachable", message=f"{host} unreachable: {what}", target=target
        )
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        # aiohttp's text is the status and the proxy's URL; the proxy's refusal is the news.
        return ServerUnavailableError(
            status=0,
            reason="Unreachable",
            message=f"{host} unreachable: the proxy {client.configuration.proxy} answered "
            f"the CONNECT with {exc.status} {exc.message}",
            target=target,
        )
    return ServerUnavailableError(
        status=0,
        reason="Unreachable",
        message=f"{host} unreachable: {type(exc).__name__}: {exc}",
        target=target,
    )


async def get_text(
    client: ApiClient, path: str, *, timeout: float | None = None, target: str = ""
) -> tuple[int, str]:
    """GET a non-JSON endpoint (``/readyz?verbose``, ``/livez``) and return (status, text).

    Unlike :func:`request`, an error status is returned rather than raised: probes want the
    body of a 500 (it names the failing check).

    Raises:
        ServerUnavailableError: The server could not be reached (``CertificateError`` for TLS).
    """
    if timeout is None:
        timeout = request_timeout()
    base, _, query = path.partition("?")
    params = [tuple(kv.split("=", 1)) if "=" in kv else (kv, "") for kv in query.split("&") if kv]
    try:
        response = await client.call_api(
            base,
            "GET",
            query_params=params,
            header_params={"Accept": "text/plain, */*"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
        async with response:
            text = await response.text()
            return response.status, text
    except ApiException as exc:
        return exc.status or 0, str(exc.body or "")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise _unreachable_error(client, exc, target or path, timeout) from None


def _secret_values(body: Any) -> list[str]:
    if not isinstance(body, Mapping) or body.get("kind") != "Secret":
        return []
    values = [*(body.get("data") or {}).values(), *(body.get("stringData") or {}).values()]
    return [v for v in values if isinstance(v, str) and v]


def _redacted(error: KubeAPIError, body: Any) -> KubeAPIError:
    # Some refusals echo the request body; a Secret's values must not travel in an exception.
    secrets = _secret_values(body)
    if not secrets:
        return error
    message = error.message
    for value in secrets:
        message = message.replace(value, "<redacted>")
    causes = tuple(
        replace(
            c, message=functools.reduce(lambda m, v: m.replace(v, "<redacted>"), secrets, c.message)
        )
        for c in error.causes
    )
    return type(error)(
        status=error.status,
        reason=error.reason,
        message=message,
        causes=causes,
        target=error.target,
    )


async def get(
    client: ApiClient, resource: Resource, name: str, namespace: str | None = None
) -> dict[str, Any]:
    """GET one object. Raises :class:`NotFoundError` if absent."""
    result: dict[str, Any] = await request(
        client, "GET", resource.path(namespace, name), target=resource.describe(namespace, name)
    )
    return result


async def list_objects(
    client: ApiClient,
    resource: Resource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> dict[str, Any]:
    """LIST a collection (all namespaces when ``namespace`` is None); returns the List object.

    ``label_selector`` and ``field_selector`` are passed as ``labelSelector`` and
    ``fieldSelector`` (e.g. ``regarding.name=x`` for Events), so the server filters.
    """
    selectors = {"labelSelector": label_selector, "fieldSelector": field_selector}
    query = {key: value for key, value in selectors.items() if value} or None
    result: dict[str, Any] = await request(
        client,
        "GET",
        resource.path(namespace),
        query=query,
        target=resource.describe(namespace, None),
    )
    return result


async def list_pages(
    client: ApiClient,
    resource: Resource,
    namespace: str | None = None,
    *,
    page_size: int = 500,
    query: Mapping[str, str | int | bool] | None = None,
    accept: str = "application/json",
) -> AsyncIterator[dict[str, Any]]:
    """LIST a collection in pages of ``page_size`` (``limit``/``continue``), as client-go's pager.

    Yields each page (a List object) as the server answers it: items without ``apiVersion``
    and ``kind`` (a LIST leaves them out), the page's ``metadata`` with its
    ``resourceVersion``. A collection changing meanwhile is listed at the first page's
    resourceVersion (the server's consistent continue).

    Args:
        client: The API client.
        resource: What kind of object.
        namespace: One namespace, or None for all of them.
        page_size: Objects per page.
        query: More query parameters (``labelSelector``, ``fieldSelector``).
        accept: The ``Accept`` header (``PartialObjectMetadataList`` for metadata only).

    Raises:
        KubeAPIError: The server refused a page (a 410 when the continue token expired).
        ServerUnavailableError: The server could not be reached.
    """
    cont = ""
    while True:
        params: dict[str, str | int | bool] = {**(query or {}), "limit": page_size}
        if cont:
            params["continue"] = cont
        page: dict[str, Any] = await request(
            client,
            "GET",
            resource.path(namespace),
            query=params,
            target=resource.describe(namespace, None),
            accept=accept,
        )
        yield page
        cont = (page.get("metadata") or {}).get("continue") or ""
        if not cont:
            return


async def create(client: ApiClient, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
    """POST a new object (``apiVersion`` and ``kind`` filled in from ``resource`` if absent).

    Raises:
        AlreadyExistsError: The object exists.
        KubeAPIError: Any other refusal.
    """
    meta = obj.get("metadata", {})
    namespace, name = meta.get("namespace"), meta.get("name")
    result: dict[str, Any] = await request(
        client,
        "POST",
        resource.path(namespace),
        body={"apiVersion": resource.api_version, "kind": resource.kind, **obj},
        target=resource.describe(namespace, name),
    )
    return result


async def delete(
    client: ApiClient,
    resource: Resource,
    name: str,
    namespace: str | None = None,
    *,
    missing_ok: bool = True,
    uid: str | None = None,
) -> None:
    """DELETE one object (foreground propagation is left to the server's default).

    Args:
        client: The API client.
        resource: What kind of object.
        name: Object name.
        namespace: Namespace, for namespaced kinds.
        missing_ok: Treat 404 as success.
        uid: Delete only the object of this uid (``preconditions.uid``): one recreated
            under the same name meanwhile is left alone (a 409, success with
            ``missing_ok``, as the object meant is gone).

    Raises:
        KubeAPIError: The delete was refused.
    """
    body = (
        None
        if uid is None
        else {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
    )
    try:
        await request(
            client,
            "DELETE",
            resource.path(namespace, name),
            body=body,
            target=resource.describe(namespace, name),
        )
    except KubeAPIError as exc:
        gone = exc.status == 404 or (uid is not None and exc.status == 409)
        if not (missing_ok and gone):
            raise


async def apply(
    client: ApiClient,
    resource: Resource,
    obj: Mapping[str, Any],
    *,
    field_manager: str,
    subresource: str | None = None,
    force: bool = True,
    dry_run: bool = False,
    field_validation: FieldValidation | None = None,
) -> dict[str, Any]:
    """Server-side apply ``obj`` (or its ``status`` with ``subresource="status"``).

    ``apiVersion`` and ``kind`` are filled in from ``resource`` when absent. The body holds
    only the fields this manager owns: fields it leaves out are released, not cleared, if
    another manager also set them.

    Args:
        client: The API client.
        resource: What kind of object.
        obj: The object with ``metadata.name`` (and ``metadata.namespace`` if namespaced).
        field_manager: Fixed name of the writer (e.g. ``cluster-inventory-manager``).
        subresource: ``"status"`` to apply the status subresource.
        force: Take ownership of fields another manager owns (conflicts become errors when
            False).
        dry_run: Ask the server to run admission and validation without storing
            (``dryRun=All``); the answer is the object as it would be stored.
        field_validation: The request's ``fieldValidation`` (KEP-2885); None leaves the
            server's default, ``Warn``. An unknown field is refused under every directive
            (apply builds a typed patch from the schema first). What ``Warn`` and ``Strict``
            add is a second, strict YAML decoding of the body that can only find repeated
            keys, which a body serialised from a dict never has, and ``Warn`` reports them
            in ``Warning`` headers this client does not read. A hot path passes ``Ignore``
            to spare the hub that pass (docs/benchmarks.md: 5-12% of its CPU per status
            write).

    Returns:
        The object as stored.

    Raises:
        KubeAPIError: The server refused; :class:`InvalidError` names the fields.
    """
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not name:
        raise ValueError(f"apply {resource.kind}: metadata.name is required")
    body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
    path = resource.path(namespace, name) + (f"/{subresource}" if subresource else "")
    result: dict[str, Any] = await request(
        client,
        "PATCH",
        path,
        body=body,
        query={
            "fieldManager": field_manager,
            "force": force,
            **({"dryRun": "All"} if dry_run else {}),
            **({"fieldValidation": field_validation} if field_validation else {}),
        },
        content_type=APPLY_CONTENT_TYPE,
        target=resource.describe(namespace, name),
    )
    return result


async def replace_status(
    client: ApiClient,
    resource: Resource,
    name: str,
    namespace: str | None,
    status: Mapping[str, Any],
    *,
    field_manager: str,
) -> dict[str, Any]:
    """Replace an object's whole ``status`` with ``status``, whatever other writers put there.

    One JSON patch (RFC 6902) of the status subresource, ``add /status``, which sets the
    member whether it exists or not: unconditional like an apply (no resourceVersion, no
    read first), but wholesale, so a field another field manager wrote and ``status`` does
    not hold is gone afterwards (an apply only releases the fields its manager leaves out,
    and a field only another manager owns stays). The server records ``field_manager`` as
    an ``Update`` of ``status``.

    Args:
        client: The API client.
        resource: What kind of object (with a status subresource).
        name: The object's name.
        namespace: Its namespace (None for a cluster-scoped object).
        status: The complete status.
        field_manager: Fixed name of the writer.

    Returns:
        The object as stored.

    Raises:
        KubeAPIError: The server refused (:class:`NotFoundError` when the object is missing).
    """
    result: dict[str, Any] = await request(
        client,
        "PATCH",
        resource.path(namespace, name) + "/status",
        body=[{"op": "add", "path": "/status", "value": dict(status)}],
        query={"fieldManager": field_manager},
        content_type=JSON_PATCH_CONTENT_TYPE,
        target=resource.describe(namespace, name),
    )
    return result
