"""The dashboard's HTTP side: aiohttp.web, Jinja2 templates, Server-Sent Events, htmx.

One HTTP stack with the rest of the project (aiohttp also serves the probe and metrics
endpoints). Routes, all ``GET`` (the dashboard writes nothing, anywhere):

- ``/``: the whole page, the content rendered in, so it reads without script too.
- ``/content``: the content alone, for the page's controls (filter, sort) and live updates;
  htmx swaps it in (``hx-get``), triggered by an input or by a ``changed`` event.
- ``/member/NAMESPACE/NAME``: the page of the member one of whose profiles that is
  (:mod:`~cluster_inventory.dashboard.member`), and ``.../content`` its content alone, swapped
  in on a ``changed`` event and every :attr:`Dashboard.member_refresh` seconds (the Events
  about its profiles are listed then, not watched). 404 for a profile the hub does not hold.
- ``/events``: a Server-Sent Events stream (aiohttp-sse) that says ``changed`` at most every
  :attr:`Dashboard.min_interval` seconds while the hub changes; the htmx ``sse`` extension
  listens.
- ``/static/...``: the stylesheet, htmx and its ``sse`` extension, shipped in the wheel (no
  CDN); ``/healthz`` and ``/readyz`` for a Deployment's probes.

Every response carries a Content-Security-Policy that allows only this origin's scripts and
styles. The ``Host`` header is checked (a web page elsewhere cannot reach the dashboard
through DNS rebinding): bound to a loopback address it answers loopback names and the
allowed hosts; bound beyond loopback it answers only the allowed hosts when any are given,
and otherwise any name, with a warning at start that says so. A request for another name
gets 421 Misdirected Request. ``/healthz`` and ``/readyz`` answer any name (the kubelet
probes a Pod by its IP).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web
from aiohttp_sse import EventSourceResponse, sse_response

from cluster_inventory import __version__
from cluster_inventory.api.views import format_time
from cluster_inventory.dashboard.hub import HubState
from cluster_inventory.dashboard.member import (
    AvailabilitySource,
    find_member,
    member_page,
    member_path,
)
from cluster_inventory.dashboard.rows import HEALTH_ORDER
from cluster_inventory.dashboard.selection import Query, select
from cluster_inventory.kube import cancel_and_wait

__all__ = ["DEFAULT_ADDRESS", "MESSAGE_CUT", "Dashboard", "parse_address"]

#: Where ``cluster-inventory dashboard`` listens unless told otherwise.
DEFAULT_ADDRESS = "127.0.0.1:8080"
#: Characters of a condition message the member table shows; the rest opens on a click
#: (a 5,000-character message filled several screens). ``describe`` prints it whole.
MESSAGE_CUT = 200
_PACKAGE = "cluster_inventory.dashboard"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_log = logging.getLogger(__name__)


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as (host, port).

    Raises:
        ValueError: Not of that form, or the port is not 0-65535.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"address {address!r}: expected HOST:PORT, e.g. {DEFAULT_ADDRESS}")
    return host.strip("[]"), int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """An allowed host as the ``Host`` header's name part: lower case, no port, no brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        return value.partition(":")[0]
    return value


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(_PACKAGE, "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals["version"] = __version__
    env.globals["message_cut"] = MESSAGE_CUT
    env.globals["member_path"] = member_path
    env.filters["rfc3339"] = format_time
    return env


class Dashboard:
    """The dashboard web application over a :class:`HubState`.

    A :class:`~cluster_inventory.controller.Runnable`: ``cluster-inventory dashboard`` adds
    it to a controller Manager, which owns the hub client, the probe and metrics endpoints
    and the signals; :meth:`serve` runs it alone.

    Args:
        state: The hub's state (started by :meth:`prepare`).
        address: (host, port) to listen on; port 0 picks a free one (:attr:`url` says which).
        announce: Called with :attr:`url` once listening (the command prints it).
        allowed_hosts: Names the ``Host`` header may carry (``dashboard.example.com``,
            ``10.0.0.5``; a port is ignored). Loopback names are always allowed on a
            loopback address; beyond loopback, an empty tuple allows any name (warned).
        min_interval: Seconds between two ``changed`` events of one stream (a burst of hub
            changes costs a browser one refresh per interval, not one per change).
        ping_interval: Seconds between two keep-alive comments of a stream; a failed one
            ends the stream of a browser that went away.
        availability: Where a member page's availability over time comes from (a
            Prometheus query); without one the page has no availability slot.
        member_refresh: Seconds between two refreshes of an open member page (its Events).
    """

    #: Every replica serves (controller-runtime's ``LeaderElectionRunnable``: no Lease).
    needs_leader_election = False

    def __init__(
        self,
        state: HubState,
        *,
        address: tuple[str, int] = ("127.0.0.1", 8080),
        min_interval: float = 0.25,
        ping_interval: float = 15.0,
        announce: Callable[[str], None] | None = None,
        allowed_hosts: Sequence[str] = (),
        availability: AvailabilitySource | None = None,
        member_refresh: float = 15.0,
    ) -> None:
        self.state = state
        self.address = address
        self.allowed_hosts = frozenset(_host_name(h) for h in allowed_hosts if h.strip())
        self.min_interval = min_interval
        self.ping_interval = ping_interval
        self.url = ""
        self.availability = availability
        self.member_refresh = member_refresh
        self._announce = announce
        self._runner: web.AppRunner | None = None
        self._env = _templates()
        self._streams: set[EventSourceResponse] = set()
        self.app = web.Application(middlewares=[self._headers])
        self.app.add_routes(
            [
                web.get("/", self._page),
                web.get("/content", self._content),
                web.get("/member/{namespace}/{name}", self._member),
                web.get("/member/{namespace}/{name}/content", self._member_content),
                web.get("/events", self._events),
                web.get("/healthz", self._healthz),
                web.get("/readyz", self._readyz),
                web.static("/static", Path(str(resources.files(_PACKAGE) / "static"))),
            ]
        )
        self.app.on_shutdown.append(self._close_streams)
        self.loopback_only = False

    # -- middleware --------------------------------------------------------------------
    @web.middleware
    async def _headers(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path not in ("/healthz", "/readyz") and not self._host_allowed(
            request.url.host or ""
        ):
            raise web.HTTPMisdirectedRequest(
                text="this dashboard does not answer for this host name (see --allowed-host)\n"
            )
        response = await handler(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        if not request.path.startswith("/static/"):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    def _host_allowed(self, host: str) -> bool:
        host = host.lower()
        if host in self.allowed_hosts:
            return True
        if self.loopback_only:
            return _is_loopback(host)
        return not self.allowed_hosts

    # -- pages -------------------------------------------------------------------------
    def _context(self, request: web.Request) -> dict[str, Any]:
        # Read first: a change while the page is built then counts as one to show.
        generation = self.state.generation
        overview = self.state.overview()
        query = Query.from_params(request.query)
        selection = select(overview, query)
        sources = list(self.state.sources.values())
        return {
            "overview": overview,
            "query": query,
            "selection": selection,
            "sources": sources,
            # An unavailable source is said so in the footer; a failing one here.
            "failures": [
                (s.name, s.failure) for s in sources if s.failure and s.state != "unavailable"
            ],
            "has_argocd": self.state.sources.get("argocd") is not None
            and self.state.sources["argocd"].state == "ok",
            "has_multikueue": self.state.sources.get("multikueue") is not None
            and self.state.sources["multikueue"].state == "ok",
            "health_order": HEALTH_ORDER,
            "namespaces": self.state.namespaces,
            "generation": generation,
            "root": "",
        }

    async def _member_context(self, request: web.Request) -> dict[str, Any]:
        generation = self.state.generation
        overview = self.state.overview()
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        row = find_member(overview, namespace, name)
        if row is None:
            raise web.HTTPNotFound(
                text=self._env.get_template("missing.html").render(
                    root="../../", wanted=f"{namespace}/{name}"
                ),
                content_type="text/html",
            )
        events, events_error = await self.state.events_of(row)
        availability = (
            await self.availability.availability(row) if self.availability is not None else None
        )
        return {
            "page": member_page(row, events, events_error=events_error, availability=availability),
            "generation": generation,
            "root": "../../",
            "refresh": self.member_refresh,
            "namespaces": self.state.namespaces,
        }

    async def _page(self, request: web.Request) -> web.Response:
        html = self._env.get_template("page.html").render(self._context(request))
        return web.Response(text=html, content_type="text/html")

    async def _content(self, request: web.Request) -> web.Response:
        html = self._env.get_template("content.html").render(self._context(request))
        return web.Response(text=html, content_type="text/html")

    async def _member(self, request: web.Request) -> web.Response:
        context = await self._member_context(request)
        html = self._env.get_template("member.html").render(context)
        return web.Response(text=html, content_type="text/html")

    async def _member_content(self, request: web.Request) -> web.Response:
        context = await self._member_context(request)
        html = self._env.get_template("member_content.html").render(context)
        return web.Response(text=html, content_type="text/html")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        # The generation the page was rendered from (``since``), or the last event the
        # browser saw (``Last-Event-ID`` on a reconnect): a change between the render and
        # the stream's start is sent at once instead of being missed.
        since = _generation(request.headers.get("Last-Event-ID") or request.query.get("since"))
        async with sse_response(request, ping_interval=self.ping_interval) as stream:
            self._streams.add(stream)
            pump = asyncio.get_running_loop().create_task(self._pump(stream, since))
            try:
                # Until the browser goes away (a ping fails) or the server stops: a quiet hub
                # must not keep the stream of a closed tab waiting for the next change.
                await stream.wait()
            finally:
                self._streams.discard(stream)
                await cancel_and_wait(pump)
            return stream

    async def _pump(self, stream: EventSourceResponse, since: int | None) -> None:
        seen = self.state.generation if since is None else min(since, self.state.generation)
        try:
            while True:
                seen = await self.state.changed(seen)
                await stream.send(str(seen), event="changed", id=str(seen))
                await asyncio.sleep(self.min_interval)
        except ConnectionResetError:  # the browser went away mid-send
            stream.stop_streaming()

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        if not self.state.synced:
            raise web.HTTPServiceUnavailable(text="ClusterProfiles not listed yet\n")
        return web.Response(text="ok\n")

    async def _close_streams(self, _: web.Application) -> None:
        for stream in list(self._streams):
            stream.stop_streaming()

    # -- running: a Runnable of a controller Manager ----------------------------------
    async def prepare(self) -> None:
        """List the hub (the profiles at least) and start listening on :attr:`address`.

        Sets :attr:`url` and calls ``announce`` with it.

        Raises:
            KubeAPIError: The hub refused to list ClusterProfiles.
            OSError: The address cannot be bound.
        """
        if self._runner is not None:
            return
        host, port = self.address
        self.loopback_only = _is_loopback(host)
        await self.state.start()
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound = self._runner.addresses[0][1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}/"
        if not self.loopback_only:
            _log.warning(
                "dashboard: listening on %s beyond loopback: anyone who reaches this "
                "address can read the inventory; %s",
                self.url,
                "it answers only for " + ", ".join(sorted(self.allowed_hosts)) + " (--allowed-host)"
                if self.allowed_hosts
                else "it answers for any host name: give --allowed-host NAME to refuse others",
            )
        if self._announce is not None:
            self._announce(self.url)

    async def run(self) -> None:
        """Serve until cancelled (the Manager's stop), then stop."""
        await self.prepare()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    def ready(self) -> bool:
        """Ready once the profiles are listed."""
        return self.state.synced

    async def stop(self) -> None:
        """Close every stream, stop listening and stop the informers; idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self.state.stop()

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        """Listen while the context is open (tests, benchmarks); yields the page's URL.

        Raises:
            KubeAPIError: The hub refused to list ClusterProfiles.
            OSError: The address cannot be bound.
        """
        try:
            await self.prepare()
            yield self.url
        finally:
            await self.stop()


def _generation(value: str | None) -> int | None:
    """A generation from a query parameter or header; None when absent or not a number."""
    try:
        return int(value) if value else None
    except ValueError:
        return None
