"""The consumer token Secret ``<inventory>/<profile>``: what the manager writes, as data.

The upstream ``secretreader`` plugin's contract (KEP-5339; ``docs/manager.md``): a Secret
named after the profile, in the profile's namespace, key ``token``. The manager also
stores ``expirationTimestamp`` (RFC 3339), so our plugin emits the ExecCredential's expiry
and consumers cache the credential until then. The Secret is owned by its ClusterProfile
(deleted with it by the garbage collector) and labelled with the manager and the profile.
Pure: the controller applies what :func:`token_secret` returns.
"""

from __future__ import annotations

import base64
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import format_time
from cluster_inventory.api.constants import (
    GROUP,
    LABEL_CLUSTER_MANAGER,
    SECRET_EXPIRATION_KEY,
    SECRET_TOKEN_KEY,
    V1ALPHA1,
)
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.manager.names import LABEL_TOKEN_FOR, TOKEN_SECRET_TYPE

__all__ = ["token_secret", "token_secret_data"]


def token_secret_data(token: kube.ServiceAccountToken) -> dict[str, str]:
    """``data`` of the Secret: ``token`` and ``expirationTimestamp``, base64-encoded."""
    return {
        SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode(),
        SECRET_EXPIRATION_KEY: base64.b64encode(format_time(token.expiration).encode()).decode(),
    }


def token_secret(
    key: ObjectKey, *, profile_uid: str | None, manager: str, data: dict[str, str]
) -> dict[str, Any]:
    """The whole Secret for profile ``key`` (server-side applied by the cluster manager).

    Args:
        key: The profile (its namespace and name are the Secret's).
        profile_uid: The profile's uid, for the owner reference.
        manager: The cluster manager's name (label ``x-k8s.io/cluster-manager``).
        data: From :func:`token_secret_data`.
    """
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": TOKEN_SECRET_TYPE,
        "metadata": {
            "name": key.name,
            "namespace": key.namespace,
            "labels": {LABEL_CLUSTER_MANAGER: manager, LABEL_TOKEN_FOR: key.name},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "ClusterProfile",
                    "name": key.name,
                    "uid": profile_uid,
                    "controller": True,
                }
            ],
        },
        "data": data,
    }
