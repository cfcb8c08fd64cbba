"""What a registration is, and what a registration Secret says. Pure.

A :class:`Registration` is one member cluster as a source describes it (``docs/manager.md``,
"Registration"). The built-in source's Secrets live in the manager's hub namespace, labelled
``cluster-inventory.dev/registration=true``: key ``kubeconfig`` holds the manager's own
credential for the member, the annotation ``cluster-inventory.dev/clustersets`` the cluster
sets it joins. :func:`parse_registration_secret` reads one; a bad Secret yields a
:class:`RegistrationError` naming the Secret and field, and never stops the others. A Secret
in agent mode (:func:`is_agent_registration`, ``docs/agent.md``) accepts a pull-mode member,
which the hub never reaches: it has no kubeconfig, and it reaches an
:class:`~.member_keys.AgentMemberKey` the member pool observes through the member's agent.
The sources that watch registrations are :mod:`cluster_inventory.manager.sources`; the
Secrets are written by :mod:`cluster_inventory.manager.admin.registration_secrets`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from cluster_inventory import _yaml, kube
from cluster_inventory.api import objects
from cluster_inventory.api.agents import AgentNameError, check_acceptance_id
from cluster_inventory.api.constants import (
    ANNOTATION_ACCEPTANCE,
    ANNOTATION_CLUSTERSETS,
    ANNOTATION_CONTEXT,
    ANNOTATION_DISPLAY_NAME,
    ANNOTATION_REGISTRATION_MODE,
    REGISTRATION_KUBECONFIG_KEY,
    REGISTRATION_MODE_AGENT,
)
from cluster_inventory.kube.events import object_reference
from cluster_inventory.manager.rules.member_keys import AgentMemberKey

__all__ = [
    "Registration",
    "RegistrationError",
    "acceptance_of",
    "check_tls_material",
    "is_agent_registration",
    "is_dns_label",
    "parse_clustersets",
    "parse_registration_secret",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, kw_only=True)
class Registration:
    """One member cluster as a source describes it. ``repr`` shows no credential.

    Attributes:
        name: Member name; becomes the ClusterProfile name (a DNS-1123 label).
        clustersets: Cluster sets the member joins.
        connection: How the manager reaches the member: the registration credential, or
            the key of an agent member, which is never dialled (``docs/agent.md``).
        display_name: ``spec.displayName`` of its profiles.
        source: Where it came from, e.g. ``Secret cluster-inventory-system/member1``.
        regarding: Object reference (``apiVersion``, ``kind``, ``namespace``, ``name``,
            ``uid``) that Events about this registration are recorded on; None when the
            source is not an API object (a file).
        properties: ``(name, value)`` pairs the source itself knows (e.g. Cluster API's
            declared version), published in ``status.properties`` beside the mirrored
            ClusterProperties (a ClusterProperty of the same name wins).
        not_ready: ``(reason, message)`` when the member must not be contacted yet (e.g. its
            control plane is not initialized): its profiles exist with ``Joined=False`` and
            that reason, and no access provider.
    """

    name: str
    clustersets: tuple[str, ...]
    connection: kube.ClusterConnection | AgentMemberKey
    display_name: str
    source: str
    regarding: Mapping[str, str] | None = None
    properties: tuple[tuple[str, str], ...] = ()
    not_ready: tuple[str, str] | None = None


class RegistrationError(ValueError):
    """A registration is invalid.

    Attributes:
        source: The object, e.g. ``Secret cluster-inventory-system/member1``.
        field: The field, e.g. ``data.kubeconfig``.
        problem: What is wrong.
        member: The member name the registration is for, when it can be told (a Secret's
            name, a Cluster's name, a file entry's valid ``name``). The manager keeps that
            member's existing profiles while its registration is invalid; an error with no
            member holds every deletion, since any profile could be the one it was for.
    """

    def __init__(self, source: str, field: str, problem: str, *, member: str | None = None) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        self.member = member
        super().__init__(f"{source}: {field}: {problem}")


def is_dns_label(name: str) -> bool:
    """True if ``name`` is a DNS-1123 label (lower case, digits, ``-``; <= 63 characters)."""
    return bool(_DNS_LABEL.match(name))


def is_agent_registration(secret: Mapping[str, Any]) -> bool:
    """True if ``secret`` accepts a pull-mode member (annotation ``registration-mode: agent``)."""
    return objects.annotations_of(secret).get(ANNOTATION_REGISTRATION_MODE) == (
        REGISTRATION_MODE_AGENT
    )


def acceptance_of(secret: Mapping[str, Any]) -> str | None:
    """The id of the acceptance an agent-mode registration Secret holds, or None.

    The annotation ``cluster-inventory.dev/acceptance`` (``manager accept``, ``docs/agent.md``);
    None for a probed member's Secret, or one without a well-formed id (nothing is trusted
    for it: ``manager accept`` gives it one).
    """
    if not is_agent_registration(secret):
        return None
    value = objects.annotations_of(secret).get(ANNOTATION_ACCEPTANCE)
    try:
        return check_acceptance_id(value, source="registration", field=ANNOTATION_ACCEPTANCE)
    except AgentNameError:
        return None


def parse_clustersets(value: str | None, source: str, field: str) -> tuple[str, ...]:
    """Comma-separated cluster set names to a tuple.

    Raises:
        RegistrationError: No name is given, or one is not a DNS-1123 label; the error names
            ``source`` and ``field``.
    """
    if value is not None and not isinstance(value, str):
        raise RegistrationError(source, field, "must be a comma-separated string")
    sets = tuple(s.strip() for s in (value or "").split(",") if s.strip())
    if not sets:
        raise RegistrationError(source, field, "names no cluster set")
    for s in sets:
        if len(s) > 63 or not _DNS_LABEL.match(s):
            raise RegistrationError(source, field, f"cluster set {s!r} is not a DNS-1123 label")
    return sets


def parse_registration_secret(secret: Mapping[str, Any]) -> Registration:
    """Turn a registration Secret into a :class:`Registration`.

    Args:
        secret: The Secret as the API returns it.

    Returns:
        The registration.

    Raises:
        RegistrationError: The name is not a DNS-1123 label, ``data.kubeconfig`` is missing
            (but for an agent-mode Secret, which has none),
            not base64, not a kubeconfig, lacks a server, names a file, holds TLS material
            that does not load, or no cluster set is named.
    """
    meta = _string_map(secret, "metadata", "Secret (no metadata)", "metadata", strings=False)
    name = meta.get("name")
    source = f"Secret {meta.get('namespace')}/{name or ''}"
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise RegistrationError(source, "metadata.name", "must be a DNS-1123 label (<= 63)")
    try:
        return _parse_registration_secret(secret, meta, name, source)
    except RegistrationError as exc:
        exc.member = name
        raise


def _parse_registration_secret(
    secret: Mapping[str, Any], meta: Mapping[str, Any], name: str, source: str
) -> Registration:
    annotations = _string_map(meta, "annotations", source, "metadata.annotations")
    sets = parse_clustersets(
        annotations.get(ANNOTATION_CLUSTERSETS),
        source,
        f"metadata.annotations[{ANNOTATION_CLUSTERSETS}]",
    )
    if is_agent_registration(secret):
        # Never dialled: the pool observes it from its agent's report (agent_members).
        return Registration(
            name=name,
            clustersets=sets,
            connection=AgentMemberKey(str(meta.get("namespace")), name),
            display_name=annotations.get(ANNOTATION_DISPLAY_NAME) or name,
            source=source,
            regarding=object_reference(secret),
        )
    raw = _string_map(secret, "data", source, "data").get(REGISTRATION_KUBECONFIG_KEY)
    field = f"data.{REGISTRATION_KUBECONFIG_KEY}"
    if not raw:
        raise RegistrationError(source, field, "is missing")
    try:
        text = base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise RegistrationError(source, field, "is not base64-encoded UTF-8 text") from None
    try:
        doc = _yaml.load(text)
    except yaml.YAMLError:
        raise RegistrationError(source, field, "is not YAML (or nests too deeply)") from None
    if not isinstance(doc, Mapping):
        raise RegistrationError(source, field, "is not a kubeconfig")
    try:
        conn = kube.connection_from_kubeconfig(
            doc, context=annotations.get(ANNOTATION_CONTEXT), inline_only=True
        )
    except kube.KubeConfigError as exc:
        raise RegistrationError(source, field, str(exc)) from None
    check_tls_material(conn, source, field)
    return Registration(
        name=name,
        clustersets=sets,
        connection=conn,
        display_name=annotations.get(ANNOTATION_DISPLAY_NAME) or name,
        source=source,
        regarding=object_reference(secret),
    )


def check_tls_material(conn: kube.ClusterConnection, source: str, field: str) -> None:
    """Check that the CA and client certificate and key of ``conn`` load.

    Checked when the registration is read: an edit whose key does not load is an invalid
    registration (its last good version stays in use), not a failing connection. Through
    :func:`kube.shared_ssl_context`: material registrations share loads once (scale.md).

    Raises:
        RegistrationError: The CA is not a PEM bundle, or the certificate and key do not load.
    """
    if conn.ca_data is None and conn.client_cert_data is None:
        return  # nothing to load: the system trust store is checked at connection time
    try:
        kube.shared_ssl_context(conn)
    except kube.KubeConfigError as exc:
        raise RegistrationError(source, field, str(exc)) from None


def _string_map(
    obj: Mapping[str, Any], key: str, source: str, field: str, *, strings: bool = True
) -> Mapping[str, Any]:
    """``obj[key]`` as a mapping ({} if absent), its values strings unless ``strings`` is off.

    The API server keeps annotations and Secret data as strings; a decoded file may not.

    Raises:
        RegistrationError: It is not a mapping, or a value is not a string.
    """
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or (
        strings and not all(isinstance(v, str) for v in value.values())
    ):
        what = "a map of strings" if strings else "a mapping"
        raise RegistrationError(source, field, f"must be {what}")
    return value
