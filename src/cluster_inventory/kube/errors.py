"""One error type per failure kind, carrying the API server's own message.

kubernetes_asyncio raises a single ``ApiException`` whose body is the server's ``Status``
object as text. Callers want to branch on the kind (not found, conflict, invalid, ...) and
show a person what the server said, which names the object and the field. These classes
carry exactly that and never the request body, so no secret can leak through them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AlreadyExistsError",
    "CertificateError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "KindNotFoundError",
    "KubeAPIError",
    "KubeConfigError",
    "KubeError",
    "LeaseUnavailableError",
    "NotFoundError",
    "RequestTimeoutError",
    "ServerUnavailableError",
    "SourceUnavailableError",
    "StatusCause",
    "UnauthorizedError",
    "error_from_status",
]


class KubeError(Exception):
    """Base of every error raised by ``cluster_inventory.kube``."""


class KindNotFoundError(KubeError):
    """The cluster serves no resource of a kind (a missing CRD, a typo in the kind)."""


class SourceUnavailableError(KubeError):
    """A source a controller reads its desired state from cannot be read at start.

    A registration source, a provider file, the first LIST of a watched collection: reading
    "nothing" from a source that failed would look like an empty fleet and delete every
    object the controller wrote, so the process stops instead, before any write
    (kube-controller-manager and Argo CD never read a failed source as empty either).

    Attributes:
        source: What could not be read, e.g. ``file /etc/clusters.yaml`` or
            ``Secrets in namespace cluster-inventory-system``.
        problem: Why, in words a person can act on; never a credential.
    """

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: cannot be read: {problem}")


class LeaseUnavailableError(KubeError):
    """The leader-election Lease can never be taken as configured: stop at start.

    A Lease in a namespace that does not exist (the create answers 404) or one the process
    may not read or write (403) will not start working by itself; retrying it forever kept a
    process up, ready, and doing nothing. Transient failures (unreachable, 5xx, a lost race)
    are retried instead.

    Attributes:
        namespace: The Lease's namespace.
        name: The Lease's name.
        problem: What the server said, e.g. ``namespaces "kueue-system" not found (404
            NotFound)``.
    """

    def __init__(self, namespace: str, name: str, problem: str) -> None:
        self.namespace = namespace
        self.name = name
        self.problem = problem
        super().__init__(f"leader election Lease {namespace}/{name} cannot be taken: {problem}")


class KubeConfigError(KubeError):
    """A kubeconfig or connection detail is missing or malformed (message names the field)."""


@dataclass(frozen=True, kw_only=True)
class StatusCause:
    """One entry of ``Status.details.causes``: which field is wrong and why."""

    field: str
    reason: str
    message: str


@dataclass(eq=False, repr=False, kw_only=True)
class KubeAPIError(KubeError):
    """The API server refused a request.

    Constructed with keywords only; ``str()`` is ``[target: ]message (status reason)``.

    Attributes:
        status: HTTP status code (e.g. 422).
        reason: The Status ``reason`` (``Invalid``, ``NotFound``, ...), or the HTTP reason.
        message: The API server's message, which names the object and usually the field.
        causes: Field-level causes from ``Status.details.causes``.
        target: What we were acting on, e.g. ``ClusterProfile team-a/c1``.
    """

    status: int
    reason: str
    message: str
    causes: tuple[StatusCause, ...] = ()
    target: str = ""

    def __post_init__(self) -> None:
        prefix = f"{self.target}: " if self.target else ""
        super().__init__(f"{prefix}{self.message} ({self.status} {self.reason})")


class UnauthorizedError(KubeAPIError):
    """401: the credential was not accepted."""


class ForbiddenError(KubeAPIError):
    """403: authenticated, but RBAC denies the verb."""


class NotFoundError(KubeAPIError):
    """404: the object (or its kind) does not exist."""


class ConflictError(KubeAPIError):
    """409 Conflict: a stale resourceVersion or an apply conflict; re-read and retry."""


class AlreadyExistsError(ConflictError):
    """409 AlreadyExists: create of an object that exists."""


class GoneError(KubeAPIError):
    """410: the resourceVersion is too old (a watch must relist)."""


class InvalidError(KubeAPIError):
    """422: the object failed validation; ``causes`` names the fields."""


class ServerUnavailableError(KubeAPIError):
    """429 or 5xx, or the server could not be reached (status 0): try again later."""


class RequestTimeoutError(ServerUnavailableError):
    """No answer within the request's timeout (``status`` 0, ``reason`` ``Unreachable``).

    Its own class, so that a caller telling a busy server (or a busy caller) from a refused
    connection checks the type, not the message: the cluster manager gives a timeout no
    verdict while it was itself behind (``docs/scale.md``).
    """


class CertificateError(ServerUnavailableError):
    """TLS failed: the serving certificate is not signed by the given CA, or has the wrong name.

    ``status`` is 0 and ``reason`` is ``CertificateInvalid``.
    """


def _parse_body(body: Any) -> dict[str, Any]:
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return {"message": body.strip()[:2000]}
        return parsed if isinstance(parsed, dict) else {}
    return body if isinstance(body, dict) else {}


def error_from_status(
    status: int, body: Any, *, http_reason: str = "", target: str = ""
) -> KubeAPIError:
    """Map an HTTP status and a ``Status`` body to the matching :class:`KubeAPIError`.

    Args:
        status: HTTP status code.
        body: Response body (``Status`` JSON as text, bytes or dict).
        http_reason: HTTP reason phrase, used when the body has no ``reason``.
        target: What the request acted on, for the message.

    Returns:
        The most specific subclass for the status and reason.
    """
    parsed = _parse_body(body)
    reason = str(parsed.get("reason") or http_reason or "Unknown")
    message = str(parsed.get("message") or http_reason or f"HTTP {status}")
    details = parsed.get("details") or {}
    causes = tuple(
        StatusCause(
            field=str(c.get("field", "")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
        )
        for c in (details.get("causes") or [])
        if isinstance(c, dict)
    )
    cls: type[KubeAPIError]
    if status == 401:
        cls = UnauthorizedError
    elif status == 403:
        cls = ForbiddenError
    elif status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
    elif status == 410:
        cls = GoneError
    elif status == 422:
        cls = InvalidError
    elif status == 429 or status >= 500:
        cls = ServerUnavailableError
    else:
        cls = KubeAPIError
    return cls(status=status, reason=reason, message=message, causes=causes, target=target)
