"""Rejected, or only not ready: when the hub's refusals prove the member is not accepted.

A hub that restarts refuses before it is itself: for a second or two its authorizer has not
read the RBAC objects yet (403 to everyone but ``system:masters``), its CRDs' paths are not
installed (503), its webhooks are not up (500), its authenticator may not know a client CA
yet (401). An agent that took the first 403 for a rejection ended for good on an ordinary
restart. So a single refusal proves nothing (``docs/agent.md``, "Transient or rejected"):

- 401, 429, 5xx, timeouts and connection failures are always transient: retried with
  backoff (:class:`~cluster_inventory.kube.Throttle`), never an end;
- a 403 or 404 on the agent's own Lease or MemberReport (:class:`MemberNotAcceptedError`)
  counts as evidence only while the hub otherwise answers: its ``/readyz`` answers 200 to
  the agent's own identity right after the refusal (a starting hub answers 403 or 500
  there: its authorizer, informers and post-start hooks not done). The refusals are proof
  once they have lasted :attr:`RejectionCheck.window` seconds (the Lease duration by
  default) with no success and no other failure in between; any answer of another kind
  starts the count again.

``manager reject`` deletes the Role and the objects, so a rejected agent gets 403s from a
ready hub and stops one window later, saying how long it was refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cluster_inventory import kube

__all__ = ["MemberNotAcceptedError", "RejectionCheck", "hub_ready", "not_accepted"]


class MemberNotAcceptedError(kube.KubeError):
    """The hub has no Lease or MemberReport this agent may write: the member is not accepted.

    ``manager accept NAME`` creates both (and the Role that lets the agent write them);
    ``manager reject NAME`` deletes them. Raised for one refusal by the single requests
    (:meth:`Heartbeat.renew <cluster_inventory.agent.Heartbeat.renew>`, the reporter's
    writes); the agent's loops end with one only once :class:`RejectionCheck` holds it
    proven (``refused_for`` set).

    Attributes:
        member: The member's name.
        namespace: The hub namespace.
        kind: ``Lease`` or ``MemberReport``.
        problem: What the hub said (404 or 403).
        refused_for: Seconds the refusals lasted while the hub was ready (None: one
            refusal, not judged).
    """

    def __init__(
        self,
        member: str,
        namespace: str,
        kind: str,
        problem: str,
        *,
        refused_for: float | None = None,
    ) -> None:
        self.member = member
        self.namespace = namespace
        self.kind = kind
        self.problem = problem
        self.refused_for = refused_for
        proof = (
            ""
            if refused_for is None
            else f"; refused for {refused_for:.0f} s while the hub's /readyz answered ok"
        )
        super().__init__(
            f"member {member} is not accepted on the hub yet (or was rejected): "
            f"{kind} {namespace}/{member}: {problem}{proof}; on the hub, "
            f"`cluster-inventory manager accept {member}` creates it"
        )

    def proven(self, refused_for: float) -> MemberNotAcceptedError:
        """This refusal, held proven after ``refused_for`` seconds of refusals."""
        return MemberNotAcceptedError(
            self.member, self.namespace, self.kind, self.problem, refused_for=refused_for
        )


def not_accepted(
    exc: kube.KubeAPIError, member: str, namespace: str, kind: str
) -> MemberNotAcceptedError | None:
    """The :class:`MemberNotAcceptedError` a refusal means, or None for any other error."""
    if isinstance(exc, kube.NotFoundError | kube.ForbiddenError):
        return MemberNotAcceptedError(member, namespace, kind, f"{exc.message} ({exc.status})")
    return None


async def hub_ready(client: kube.ApiClient, *, timeout: float | None = None) -> str | None:
    """Whether the hub answers ``/readyz`` with 200 to ``client``: None if so, else why not.

    The default RBAC lets every identity read ``/readyz`` (``system:public-info-viewer``),
    so a 403 there, like a 500, means the hub is still starting.

    Args:
        client: The agent's own hub client.
        timeout: Seconds the request may take (the project's request timeout by default).

    Returns:
        None when ready; otherwise what the hub said (``/readyz answered 403``, or the
        failure), for the log.
    """
    try:
        status, _ = await kube.get_text(client, "/readyz", timeout=timeout, target="/readyz")
    except kube.KubeError as exc:
        return f"/readyz: {exc}"
    return None if status == 200 else f"/readyz answered {status}"


class RejectionCheck:
    """Judges the refusals of one agent's requests on its own objects (see module docstring).

    One instance is shared by the agent's heartbeat (on the Lease loop's thread) and its
    reporter (on the main loop): a success of either ends a count of refusals, so the
    agent stops only when nothing of its own is accepted any more.

    Args:
        window: Seconds the refusals must last, while the hub is ready, to prove that the
            member is not accepted (0: the first refusal from a ready hub proves it).
        clock: Monotonic clock (seconds).

    Raises:
        ValueError: ``window`` is negative.
    """

    def __init__(self, window: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if window < 0:
            raise ValueError(f"rejection window: {window:g} s is negative")
        self.window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None

    def succeeded(self) -> None:
        """A request on the agent's own objects succeeded: no refusal counts any more."""
        with self._lock:
            self._since = None

    def interrupted(self) -> None:
        """The hub failed otherwise (unreachable, 401, 5xx): the count starts again."""
        with self._lock:
            self._since = None

    def judge(
        self, refusal: MemberNotAcceptedError, *, not_ready: str | None
    ) -> MemberNotAcceptedError | None:
        """The proof ``refusal`` completes, or None while it proves nothing yet.

        Args:
            refusal: The refusal just seen.
            not_ready: Why the hub was not ready right after it (:func:`hub_ready`), or
                None if it was.
        """
        now = self._clock()
        with self._lock:
            if not_ready is not None:
                self._since = None
                return None
            if self._since is None:
                self._since = now
            lasted = now - self._since
        return refusal.proven(lasted) if lasted >= self.window else None

    async def failure(self, client: kube.ApiClient, error: kube.KubeError) -> str:
        """Judge one failed request on the agent's own objects.

        Args:
            client: The client that failed (``/readyz`` is asked with it, on its loop).
            error: What it raised.

        Returns:
            Words for the retry's log line: why this is not (yet) a rejection.

        Raises:
            MemberNotAcceptedError: ``error`` completes the proof (``refused_for`` set).
        """
        if not isinstance(error, MemberNotAcceptedError):
            self.interrupted()
            return "transient: never taken for a rejection"
        not_ready = await hub_ready(client)
        proof = self.judge(error, not_ready=not_ready)
        if proof is not None:
            raise proof
        if not_ready is not None:
            return f"proves nothing: the hub is not ready ({not_ready})"
        return (
            f"not yet taken for a rejection: that needs {self.window:g} s of refusals while "
            "the hub's /readyz answers ok"
        )
