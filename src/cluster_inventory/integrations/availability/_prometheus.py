"""Prometheus's HTTP API, the part availability reads: ``GET /api/v1/query_range``.

aiohttp, the product's one HTTP stack. An unreachable server, an error answer or a body that
is not the documented JSON is a :class:`PrometheusError` naming the server (its URL without
any user or password) and what went wrong, never an empty result.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from cluster_inventory.integrations.availability.history import (
    SeriesError,
    TimeSeries,
    decode_matrix,
)

__all__ = ["PrometheusError", "query_range", "server_url"]


class PrometheusError(Exception):
    """Prometheus could not be asked, or refused the question.

    Attributes:
        server: The server's URL without credentials.
        problem: What went wrong.
    """

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(f"Prometheus {server}: {problem}")
        self.server, self.problem = server, problem


def server_url(url: str) -> str:
    """``url`` checked (``http`` or ``https`` with a host) and without user or password.

    Raises:
        PrometheusError: It is not such a URL.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
        parts = parts._replace(scheme="")  # refused below
    host = parts.hostname or ""
    shown = urlunsplit(parts._replace(netloc=host if port is None else f"{host}:{port}"))
    if parts.scheme not in ("http", "https") or not host:
        raise PrometheusError(
            shown or "''", "the URL must be http:// or https:// with a host (and a valid port)"
        )
    return shown


def _scrubbed(text: str, url: str) -> str:
    """``text`` without the URL's password (an aiohttp error may quote the URL)."""
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


async def query_range(
    url: str,
    query: str,
    *,
    start: float,
    end: float,
    step: float,
    timeout: float = 30.0,
) -> list[TimeSeries]:
    """Run ``query`` over ``[start, end]`` at ``step`` (all in seconds) and decode the matrix.

    Args:
        url: The server's base URL (a path prefix is kept: ``http://host/prometheus``); a
            ``user:password@`` in it is sent as HTTP basic authentication.
        query: PromQL.
        start: Unix seconds of the first step.
        end: Unix seconds of the last step.
        step: Seconds between steps (Prometheus refuses more than 11,000 per series).
        timeout: Seconds for the whole request.

    Returns:
        The series, each checked (:func:`decode_matrix`).

    Raises:
        PrometheusError: The server was not reached, answered an error (its ``error``
            text), or answered something that is not a matrix.
    """
    shown = server_url(url)
    endpoint = url.rstrip("/") + "/api/v1/query_range"
    params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(endpoint, params=params) as response,
        ):
            text = await response.text()
            status = response.status
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        problem = _scrubbed(f"{exc.__class__.__name__}: {exc}", url)
        raise PrometheusError(shown, f"cannot be reached: {problem}") from None
    try:
        body = json.loads(text)
    except ValueError:
        raise PrometheusError(
            shown, f"HTTP {status}: the answer is not JSON (is this Prometheus's URL?)"
        ) from None
    if status != 200 and isinstance(body, dict) and body.get("error"):
        raise PrometheusError(shown, f"HTTP {status}: {body.get('errorType')}: {body['error']}")
    try:
        return decode_matrix(body, query=query)
    except SeriesError as exc:
        raise PrometheusError(shown, str(exc)) from None
