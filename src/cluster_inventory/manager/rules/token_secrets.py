"""The consumer token Secret ``<inventory>/<profile>``: what the manager writes, as data. Pure.

The upstream ``secretreader`` plugin's contract (KEP-5339; ``docs/manager.md``): a Secret
named after the profile, in the profile's namespace, key ``token``. The manager also
stores ``expirationTimestamp`` (RFC 3339), so our plugin emits the ExecCredential's expiry
and consumers cache the credential until then. The Secret is owned by its ClusterProfile
(deleted with it by the garbage collector) and labelled with the manager and the profile;
its annotations say when the token was minted, when it expires and for which grant, so a
replica taking a profile over keeps a token until its rotation is due (:func:`adoption_due`).
The token controller (:mod:`cluster_inventory.manager.controllers.token_controller`) keeps the
Secrets current.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import format_time, objects
from cluster_inventory.api.constants import (
    ANNOTATION_TOKEN_EXPIRES,
    ANNOTATION_TOKEN_GRANT,
    ANNOTATION_TOKEN_ISSUED,
    LABEL_CLUSTER_MANAGER,
    LABEL_TOKEN_FOR,
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
    TOKEN_SECRET_TYPE,
)
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.api.views import parse_time

__all__ = ["adoption_due", "token_annotations", "token_secret", "token_secret_data"]


def token_secret_data(token: kube.ServiceAccountToken) -> dict[str, str]:
    """``data`` of the Secret: ``token`` and ``expirationTimestamp``, base64-encoded."""
    return {
        SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode(),
        SECRET_EXPIRATION_KEY: base64.b64encode(format_time(token.expiration).encode()).decode(),
    }


def token_annotations(
    *, issued: dt.datetime, expiration: dt.datetime, member_id: str, role: str
) -> dict[str, str]:
    """The Secret's annotations saying when its token was minted, expires, and for what grant.

    Args:
        issued: When the token was minted (our clock).
        expiration: When it expires (the TokenRequest's ``expirationTimestamp``).
        member_id: The member's id (``kube-system`` UID) it was minted on.
        role: The member ClusterRole its ServiceAccount is bound to.
    """
    return {
        ANNOTATION_TOKEN_ISSUED: format_time(issued),
        ANNOTATION_TOKEN_EXPIRES: format_time(expiration),
        ANNOTATION_TOKEN_GRANT: f"{member_id}:{role}",
    }


def adoption_due(
    secret: dict[str, Any] | None, *, member_id: str | None, role: str, fraction: float
) -> dt.datetime | None:
    """When a token Secret written by another replica (or an earlier run) must be rotated.

    A replica taking a profile over keeps its token until then instead of minting one (five
    requests on the member and a hub write per profile, ``docs/scale.md``).

    Args:
        secret: The Secret (its metadata is enough), or None if there is none.
        member_id: The member's id now; None (unknown) adopts nothing.
        role: The inventory's member ClusterRole now.
        fraction: Of the token's life after which it is rotated.

    Returns:
        ``issued + (expires - issued) * fraction`` if the Secret's annotations
        (:func:`token_annotations`) are whole and name this grant; otherwise None.
    """
    if secret is None or member_id is None:
        return None
    notes = objects.annotations_of(secret)
    if notes.get(ANNOTATION_TOKEN_GRANT) != f"{member_id}:{role}":
        return None
    issued = parse_time(notes.get(ANNOTATION_TOKEN_ISSUED))
    expires = parse_time(notes.get(ANNOTATION_TOKEN_EXPIRES))
    if issued is None or expires is None or expires <= issued:
        return None
    return issued + (expires - issued) * fraction


def token_secret(
    key: ObjectKey,
    *,
    profile_uid: str | None,
    manager: str,
    data: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The whole Secret for profile ``key`` (server-side applied by the cluster manager).

    Args:
        key: The profile (its namespace and name are the Secret's).
        profile_uid: The profile's uid, for the owner reference.
        manager: The cluster manager's name (label ``x-k8s.io/cluster-manager``).
        data: From :func:`token_secret_data`.
        annotations: From :func:`token_annotations`.
    """
    return {
        "apiVersion": kube.SECRETS.api_version,
        "kind": kube.SECRETS.kind,
        "type": TOKEN_SECRET_TYPE,
        "metadata": {
            "name": key.name,
            "namespace": key.namespace,
            "labels": {LABEL_CLUSTER_MANAGER: manager, LABEL_TOKEN_FOR: key.name},
            "annotations": annotations or {},
            "ownerReferences": [
                {
                    "apiVersion": kube.CLUSTER_PROFILES.api_version,
                    "kind": kube.CLUSTER_PROFILES.kind,
                    "name": key.name,
                    "uid": profile_uid,
                    "controller": True,
                }
            ],
        },
        "data": data,
    }
