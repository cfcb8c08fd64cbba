"""Short-lived ServiceAccount tokens from the TokenRequest API (``authentication.k8s.io/v1``).

Bound tokens expire on their own and die with their ServiceAccount, which makes them the
member credential the cluster manager hands to consumers (``docs/manager.md``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from urllib.parse import quote

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import request

__all__ = ["ServiceAccountToken", "request_service_account_token"]


@dataclass(frozen=True, kw_only=True)
class ServiceAccountToken:
    """A minted token; ``repr`` leaves the token out.

    Attributes:
        token: The bearer token.
        expiration: When the API server says it expires (UTC).
    """

    token: str = field(repr=False)
    expiration: dt.datetime


async def request_service_account_token(
    client: ApiClient,
    namespace: str,
    service_account: str,
    *,
    expiration_seconds: int = 3600,
    audiences: list[str] | None = None,
) -> ServiceAccountToken:
    """Mint a token for ``namespace/service_account`` with TokenRequest.

    Args:
        client: Client of the cluster that owns the ServiceAccount.
        namespace: Its namespace.
        service_account: Its name.
        expiration_seconds: Requested lifetime in seconds (the server enforces >= 600 and may
            shorten it; the returned expiration is the server's).
        audiences: Audiences; the API server's own by default.

    Raises:
        KubeAPIError: The server refused (e.g. ``NotFoundError`` for a missing account).
    """
    spec: dict[str, object] = {"expirationSeconds": expiration_seconds}
    if audiences:
        spec["audiences"] = audiences
    path = (
        f"/api/v1/namespaces/{quote(namespace, safe='')}/serviceaccounts/"
        f"{quote(service_account, safe='')}/token"
    )
    answer = await request(
        client,
        "POST",
        path,
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        target=f"ServiceAccount {namespace}/{service_account} token",
    )
    status = answer["status"]
    expiration = dt.datetime.fromisoformat(status["expirationTimestamp"].replace("Z", "+00:00"))
    return ServiceAccountToken(token=status["token"], expiration=expiration)
