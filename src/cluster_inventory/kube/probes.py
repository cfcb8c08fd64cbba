"""What a kube-apiserver's ``/readyz`` answer, or a request that failed, says about its health.

Pure. The cluster manager probes each member from the hub side and turns the answer into the
profile's ``ControlPlaneHealthy``; a pull-mode member's agent probes its own API server from
inside and writes the same reading into its MemberReport's ``apiServerHealth``
(``docs/agent.md``). Both read an answer here, so one failure has one reason and one message
wherever it is reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cluster_inventory.kube.errors import (
    CertificateError,
    ForbiddenError,
    KubeError,
    ServerUnavailableError,
    UnauthorizedError,
)

__all__ = ["ConditionState", "probe_failure", "readyz_condition", "readyz_failure"]

_FAILED_CHECK = re.compile(r"^\[-\](\S+?)\s+failed(?::\s*(.*))?$")


@dataclass(frozen=True)
class ConditionState:
    """Status (``"True"``, ``"False"``, ``"Unknown"``), reason and message of one condition."""

    status: str
    reason: str
    message: str = ""


def readyz_failure(body: str) -> tuple[str, str]:
    """The failing checks of a verbose ``/readyz`` answer, as (reason, message).

    ``ReadyzCheckFailed`` names the ``[-]`` checks (``[-]shutdown failed`` while the API server
    drains). A body without check lines, such as the ``Status`` a draining server sends with a
    503, gives ``ReadyzFailed`` with that Status's message, or else the body's last line
    (at most 200 characters).
    """
    failed = []
    for line in body.splitlines():
        match = _FAILED_CHECK.match(line.strip())
        if match:
            failed.append(match.group(1))
    if failed:
        return "ReadyzCheckFailed", "readyz checks failed: " + ", ".join(failed)
    detail = _status_message(body) or (body.strip().splitlines() or ["no detail"])[-1]
    return "ReadyzFailed", "readyz failed: " + detail[:200]


def _status_message(body: str) -> str | None:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        message = parsed.get("message")
        return str(message) if message else None
    return None


def readyz_condition(status: int, body: str) -> ConditionState:
    """``ControlPlaneHealthy`` from the HTTP status and body of ``GET /readyz?verbose``.

    200 is ``True``/``APIServerReady``; 401 and 403 are ``False``/``Unauthorized``; anything
    else is ``False`` with :func:`readyz_failure`'s reason and message.
    """
    if status == 200:
        return ConditionState("True", "APIServerReady", "readyz: all checks passed")
    if status in (401, 403):
        return ConditionState("False", "Unauthorized", f"readyz answered {status}")
    return ConditionState("False", *readyz_failure(body))


def probe_failure(
    exc: KubeError, *, credential: str = "the registration credential"
) -> ConditionState:
    """The ``False`` condition for a probe request that raised ``exc``.

    Reasons: ``CertificateInvalid`` (TLS), ``Unauthorized`` (401: ``<credential> is refused
    (401)``, never the credential itself), ``Forbidden`` (403), ``APIServerUnreachable`` (no
    HTTP answer: refused, reset, timed out), ``APIServerUnavailable`` (429 or 5xx, e.g.
    ``apiserver is shutting down`` during a graceful stop) and ``ProbeFailed`` for anything
    else.

    Args:
        exc: What the probe raised.
        credential: Whose credential a 401 refused, as the message names it: the cluster
            manager's registration credential by default; the member agent says its own.
    """
    if isinstance(exc, CertificateError):
        return ConditionState("False", "CertificateInvalid", str(exc))
    if isinstance(exc, UnauthorizedError):
        return ConditionState("False", "Unauthorized", f"{credential} is refused (401)")
    if isinstance(exc, ForbiddenError):
        return ConditionState("False", "Forbidden", str(exc))
    if isinstance(exc, ServerUnavailableError):
        if exc.status == 0:
            return ConditionState("False", "APIServerUnreachable", str(exc))
        return ConditionState("False", "APIServerUnavailable", str(exc))
    return ConditionState("False", "ProbeFailed", str(exc))
