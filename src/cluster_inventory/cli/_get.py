"""``get``: the command a person types most, kept free of typer, rich and the kube client.

:func:`cluster_inventory.cli.main` parses ``get``'s options with :func:`parse_get_args` and
calls :func:`run_get` directly, so a listing pays neither typer's start-up (its parameter
coercion imports pydantic) nor aiohttp's: those cost more than the LIST itself. Anything
the small parser does not know (``--help``, an unknown flag) goes through the typer app,
whose ``get`` command calls the same :func:`run_get`; a unit test keeps the two parsers in
agreement. The hub helpers it uses, which serve the other commands too, are in
:mod:`cluster_inventory.cli._hub`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cluster_inventory.api.constants import GROUP
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._hub import context_namespace, hub_client
from cluster_inventory.cli._table import format_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["RESOURCE_TYPES", "parse_get_args", "run_get"]


def _parse_output(output: str | None) -> str:
    """The ``-o`` format's name; "" for the default table.

    Our own formats are the table and ``wide``; the rest are kubectl's
    (:data:`~cluster_inventory.cli._kubectl.DELEGATED_FORMATS`). An unknown format ends the
    command with kubectl's message.
    """
    from cluster_inventory.cli._kubectl import DELEGATED_FORMATS

    kind = (output or "").partition("=")[0]
    allowed = ("wide", *DELEGATED_FORMATS)
    if output is not None and kind not in allowed:
        fail(
            f'unable to match a printer suitable for the output format "{output}", '
            f"allowed formats are: {','.join(sorted(allowed))}"
        )
    return kind


#: The resource types ``get`` shows, by every spelling kubectl accepts for them -> plural.
RESOURCE_TYPES = {
    spelling: plural
    for plural, singular in (
        ("clusterprofiles", "clusterprofile"),
        ("placementdecisions", "placementdecision"),
    )
    for spelling in (plural, singular, f"{plural}.multicluster.x-k8s.io")
}


def resolve_resource(resource: str | None, name: str | None) -> tuple[str, str | None]:
    """Read ``get [RESOURCE] [NAME]``'s words as (plural, name), as kubectl reads them.

    A first word that names a resource type (:data:`RESOURCE_TYPES`) is the type and the
    second the name; otherwise, as before there were other types, a lone word is a
    ClusterProfile's name (``get clusterprofiles NAME`` reaches a profile whose name is a
    type's).

    Raises:
        SystemExit: Two words whose first is no type we show (via :func:`fail`).
    """
    if resource is None:
        return "clusterprofiles", None
    plural = RESOURCE_TYPES.get(resource)
    if plural is not None:
        return plural, name
    if name is None:
        return "clusterprofiles", resource
    fail(f'unknown resource type "{resource}": get shows clusterprofiles and placementdecisions')


#: ``get``'s options: flag spellings -> (parameter, takes a value).
_GET_OPTIONS = {
    "-n": ("namespace", True),
    "--namespace": ("namespace", True),
    "-A": ("all_namespaces", False),
    "--all-namespaces": ("all_namespaces", False),
    "-l": ("selector", True),
    "--selector": ("selector", True),
    "-o": ("output", True),
    "--output": ("output", True),
    "--kubeconfig": ("kubeconfig", True),
    "--context": ("context", True),
}


def parse_get_args(argv: list[str]) -> dict[str, Any] | None:
    """Parse ``get``'s arguments as the typer command does, or return None.

    Handles ``[RESOURCE] [NAME]``, ``-n NS``/``-nNS``/``--namespace[=]NS``, ``-A``, ``-l``, ``-o``,
    ``--kubeconfig`` and ``--context`` (a repeated option: the last one wins, as in click).
    Anything else (``--help``, ``--``, an unknown or incomplete option, three words) returns
    None, and the typer app parses it and gives its own messages.

    Returns:
        Keyword arguments for :func:`run_get`, or None.
    """
    opts: dict[str, Any] = {
        "resource": None,
        "name": None,
        "namespace": None,
        "all_namespaces": False,
        "selector": None,
        "output": None,
        "kubeconfig": None,
        "context": None,
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            if opts["name"] is not None:
                return None
            opts["name" if opts["resource"] is not None else "resource"] = arg
            continue
        flag, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if flag not in _GET_OPTIONS and len(arg) > 2 and arg[:2] in _GET_OPTIONS:
            flag, value, eq = arg[:2], arg[2:], "="  # -nNS
        known = _GET_OPTIONS.get(flag)
        if known is None:
            return None
        param, takes_value = known
        if not takes_value:
            if eq:
                return None
            opts[param] = True
            continue
        if not eq:
            if i >= len(argv):
                return None
            value = argv[i]
            i += 1
        opts[param] = Path(value) if param == "kubeconfig" else value
    return opts


def run_get(
    *,
    resource: str | None = None,
    name: str | None,
    namespace: str | None,
    all_namespaces: bool,
    selector: str | None,
    output: str | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """List ClusterProfiles or PlacementDecisions on the hub, or show one.

    See ``cluster-inventory get --help``; ``resource`` and ``name`` are the command's words
    (:func:`resolve_resource`).

    Raises:
        SystemExit: 1 after one ``error:`` line on stderr; or never returns when kubectl
            takes over (``os.execv``).
    """
    from cluster_inventory.cli import _kubectl

    kind = _parse_output(output)
    plural, name = resolve_resource(resource, name)
    if all_namespaces and name:
        fail("a resource cannot be retrieved by name across all namespaces")
    if kind in _kubectl.DELEGATED_FORMATS:
        kubectl = _kubectl.find_kubectl()
        if kubectl is not None:
            argv = _kubectl.get_argv(
                kubectl,
                resource=f"{plural}.multicluster.x-k8s.io",
                output=str(output),
                name=name,
                namespace=namespace,
                all_namespaces=all_namespaces,
                selector=selector,
                kubeconfig=kubeconfig,
                context=context,
            )
            sys.stdout.flush()
            try:
                os.execv(kubectl, argv)  # noqa: S606 - kubectl prints, so it is its output
            except OSError as exc:
                fail(f"cannot run kubectl ({kubectl}): {exc.strerror}")
        if kind not in ("json", "yaml"):
            fail(
                f"-o {kind} is printed by kubectl, which was not found on PATH (or set "
                f"{_kubectl.KUBECTL_ENV}); without it, get prints the table, wide, json and yaml"
            )
    path = kubeconfig
    fast = _fetch_fast(path, context, plural, name, namespace, all_namespaces, selector)
    if fast is not None:
        ns, profiles = fast
    else:
        from cluster_inventory import kube

        ns = None if all_namespaces else (namespace or context_namespace(path, context))
        try:
            import asyncio

            profiles = asyncio.run(_fetch(path, context, plural, name, ns, selector))
        except kube.KubeError as exc:
            fail(str(exc))
    for profile in profiles:  # as kubectl without --show-managed-fields
        meta = profile.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    if kind in ("json", "yaml"):
        _print_without_kubectl(kind, profiles[0] if name else _list_object(profiles))
    elif not profiles:
        where = "" if ns is None else f" in {ns} namespace"
        sys.stderr.write(f"No resources found{where}.\n")
    else:
        columns, wide_columns, row = _printer(plural)
        wide = kind == "wide"
        headers = [*columns, *(wide_columns if wide else ())]
        if ns is None:
            headers.insert(0, "NAMESPACE")
        rows = [row(o, wide=wide, namespace=ns is None) for o in profiles]
        sys.stdout.write(format_table(headers, rows))


def _printer(plural: str) -> tuple[Sequence[str], Sequence[str], Callable[..., list[str]]]:
    """The columns, the ``-o wide`` columns and the row function of ``plural``'s table."""
    if plural == "placementdecisions":
        from cluster_inventory.cli import decisions

        return decisions.DECISION_COLUMNS, decisions.DECISION_WIDE_COLUMNS, decisions.decision_row
    from cluster_inventory.cli import profiles

    return profiles.PROFILE_COLUMNS, profiles.WIDE_COLUMNS, profiles.profile_row


def _fetch_fast(
    path: Path | None,
    context: str | None,
    plural: str,
    name: str | None,
    namespace: str | None,
    all_namespaces: bool,
    selector: str | None,
) -> tuple[str | None, list[dict[str, Any]]] | None:
    """The objects over the standard library's HTTPS, or None to take the full client's path.

    A command a person types pays its start-up every time, and aiohttp with
    kubernetes_asyncio costs more to import than the LIST itself. This is the exec plugins'
    small hub client: a kubeconfig with a certificate or a token, one GET. Anything else (an
    exec user, a proxy, an error answer) returns None, and the full client does the work and
    reports any error exactly as the other commands do.

    Each resource is read in the version its own discovery gives
    (:func:`cluster_inventory.api.versions.read_version`: one more GET), as the full
    client's ``kube.served_resource`` reads it.

    Returns:
        (namespace listed, or None for all; the objects), or None.
    """
    import json

    from cluster_inventory.api.constants import REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV
    from cluster_inventory.api.versions import NEWEST_VERSION_PATH, read_version
    from cluster_inventory.credentials.plugins.hub import Hub, HubError, HubTimeoutError, quote

    # The root callback checked it (--request-timeout); the full client reads the same.
    timeout = float(os.environ.get(REQUEST_TIMEOUT_ENV) or REQUEST_TIMEOUT)

    opts = {
        **({"kubeconfig": str(path)} if path else {}),
        **({"context": context} if context else {}),
    }
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None  # the full client applies proxies and NO_PROXY as client-go does
    try:
        hub = Hub(opts)
    except HubError:
        return None
    if hub.proxy_url:
        return None

    def answer(path: str) -> tuple[int, Any] | None:
        """(status, decoded JSON or None), or None on a failed request.

        None lets the full client report the failure, except for a timeout: the full client
        would wait as long again before saying the same thing, and every command gives up
        after one request timeout (docs/cli.md).
        """
        try:
            status, body = hub.get_json(path, user_agent="cluster-inventory", timeout=timeout)
        except HubTimeoutError as exc:
            fail(str(exc))
        except HubError:
            return None
        return status, (json.loads(body) if status == 200 else None)

    ns = None if all_namespaces else (namespace or hub.namespace_hint or "default")
    discovered = answer(NEWEST_VERSION_PATH)
    if discovered is None or discovered[0] not in (200, 404):
        return None
    version = read_version(discovered[1], plural)
    url = f"/apis/{GROUP}/{version}"
    url += f"/namespaces/{quote(ns)}/{plural}" if ns else f"/{plural}"
    if name:
        url += "/" + quote(name)
    elif selector:
        url += "?labelSelector=" + quote(selector)
    got = answer(url)
    doc = got[1] if got is not None else None
    if doc is None:
        return None
    items: list[dict[str, Any]] = [doc] if name else doc.get("items") or []
    for item in items:  # a LIST drops them from items; kubectl puts them back
        item.setdefault("apiVersion", f"{GROUP}/{version}")
        item.setdefault("kind", _KINDS[plural])
    return ns, items


#: The kind of each plural ``get`` shows.
_KINDS = {"clusterprofiles": "ClusterProfile", "placementdecisions": "PlacementDecision"}


async def _fetch(
    path: Path | None,
    context: str | None,
    plural: str,
    name: str | None,
    ns: str | None,
    selector: str | None,
) -> list[dict[str, Any]]:
    """One object, or those of ``ns`` (every namespace if None) matching ``selector``."""
    from cluster_inventory import kube

    async with await hub_client(path, context) as client:
        base = kube.PLACEMENT_DECISIONS if plural == "placementdecisions" else kube.CLUSTER_PROFILES
        resource = await kube.served_resource(client, base)
        if name:
            return [await kube.get(client, resource, name, namespace=ns)]
        listed = await kube.list_objects(client, resource, ns, label_selector=selector)
        items: list[dict[str, Any]] = listed.get("items") or []
        for item in items:  # a LIST drops them from items; kubectl puts them back
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items


def _list_object(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``v1`` ``List`` kubectl wraps several objects in."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def _print_without_kubectl(kind: str, shown: Any) -> None:
    """Print ``shown`` as json or yaml with the standard library / PyYAML (no kubectl).

    The same data and key order as kubectl's (sorted keys, 4-space JSON indent); kubectl's
    own bytes differ in small ways (Go escapes ``<``, ``>`` and ``&`` in JSON strings).
    """
    import json

    import yaml

    if kind == "json":
        sys.stdout.write(json.dumps(shown, indent=4, sort_keys=True, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(shown, sort_keys=True, allow_unicode=True))
