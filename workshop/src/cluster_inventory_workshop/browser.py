"""Debian's headless Chromium, driven over the DevTools protocol, for page tests and benchmarks.

The dashboard is live (Server-Sent Events swap content in without a reload), so a test must
watch one open page change rather than dump a page once. :class:`Browser` starts
``chromium --headless --remote-debugging-port=0`` and speaks the Chrome DevTools Protocol
over the browser's websocket with aiohttp (the project's one HTTP stack). A :class:`Page`
can navigate, evaluate JavaScript, wait for a condition in the page, and keeps every response
body the page received (and every Server-Sent Event message), so a test can grep all of them.

Waiting is event-driven inside the page: :meth:`Page.wait_for` installs a
``MutationObserver`` and resolves when the predicate holds after a DOM change, and the
Python side only bounds that with a timeout. Nothing polls on a timer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

__all__ = ["Browser", "BrowserError", "Page", "Response", "chromium_binary"]

#: Flags of a quiet, sandbox-less headless run (as a test container runs it).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
)
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
_HOW = (
    "Debian's chromium is needed: `make assets` installs it (as root: apt-get install -y chromium)"
)


class BrowserError(RuntimeError):
    """Chromium is missing, did not start, or a DevTools command failed."""


def chromium_binary() -> str:
    """The path of ``chromium`` (or ``chromium-browser``) on PATH.

    Raises:
        BrowserError: Neither is installed; the message says how to install it.
    """
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise BrowserError(_HOW)
    return found


@dataclass(frozen=True)
class Response:
    """One response the page received.

    Attributes:
        url: The request URL.
        status: HTTP status.
        body: The body as text ("" when Chromium kept none), or one Server-Sent Event's data.
    """

    url: str
    status: int
    body: str


@dataclass
class _Session:
    ws: aiohttp.ClientWebSocketResponse
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    pages: dict[str, Page] = field(default_factory=dict)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, sid: str = ""
    ) -> Any:
        ident = next(self.ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if sid:
            message["sessionId"] = sid
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[ident] = future
        await self.ws.send_str(json.dumps(message))
        return await future


class Page:
    """One tab. Made by :meth:`Browser.page`.

    Attributes:
        responses: Every response received so far (bodies fetched as each load finished),
            plus one entry per Server-Sent Event message (status 200, the event's data).
        errors: JavaScript exceptions and console errors (a blocked script shows here).
    """

    def __init__(self, session: _Session, sid: str) -> None:
        self._session = session
        self._sid = sid
        self._loaded: asyncio.Event = asyncio.Event()
        self._meta: dict[str, tuple[str, int]] = {}
        self._fetching: set[asyncio.Task[None]] = set()
        self.responses: list[Response] = []
        self.errors: list[str] = []

    async def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a DevTools command to this page and return its result.

        Raises:
            BrowserError: The command failed.
        """
        return await self._session.send(method, params, sid=self._sid)

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.loadEventFired":
            self._loaded.set()
        elif method == "Network.responseReceived":
            response = params["response"]
            self._meta[params["requestId"]] = (response["url"], int(response["status"]))
        elif method == "Network.loadingFinished":
            request_id = params["requestId"]
            if request_id in self._meta:
                task = asyncio.get_running_loop().create_task(self._body(request_id))
                self._fetching.add(task)
                task.add_done_callback(self._fetching.discard)
        elif method == "Network.eventSourceMessageReceived":
            url = self._meta.get(params["requestId"], ("", 200))[0]
            self.responses.append(Response(url, 200, str(params.get("data", ""))))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails") or {}
            self.errors.append(str((details.get("exception") or {}).get("description") or details))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"{entry.get('text')} {entry.get('url', '')}".strip())

    async def _body(self, request_id: str) -> None:
        url, status = self._meta[request_id]
        try:
            found = await self.send("Network.getResponseBody", {"requestId": request_id})
        except BrowserError:
            body = ""  # e.g. a redirect or a response Chromium did not keep
        else:
            body = found.get("body", "")
            if found.get("base64Encoded"):
                body = base64.b64decode(body).decode("utf-8", "replace")
        self.responses.append(Response(url, status, body))

    async def settled_responses(self) -> list[Response]:
        """Every response so far, once the bodies being fetched are in."""
        while self._fetching:
            await asyncio.gather(*list(self._fetching))
        return list(self.responses)

    async def goto(self, url: str, *, timeout: float = 60.0) -> None:
        """Navigate and wait for the load event.

        Raises:
            BrowserError: Navigation failed (the message has Chromium's error text).
            TimeoutError: No load event within ``timeout`` seconds.
        """
        self._loaded.clear()
        result = await self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")
        await asyncio.wait_for(self._loaded.wait(), timeout)

    async def evaluate(self, expression: str, *, timeout: float = 60.0) -> Any:
        """Evaluate ``expression`` in the page (promises awaited) and return its JSON value.

        Raises:
            BrowserError: The expression threw.
            TimeoutError: No result within ``timeout`` seconds.
        """
        result = await asyncio.wait_for(
            self.send(
                "Runtime.evaluate",
                {"expression": expression, "awaitPromise": True, "returnByValue": True},
            ),
            timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(
                str((details.get("exception") or {}).get("description") or details["text"])
            )
        return result["result"].get("value")

    async def wait_for(self, predicate: str, *, timeout: float = 60.0) -> Any:
        """Wait until the JavaScript expression ``predicate`` is truthy; return its value.

        It is checked at once and after every DOM change (a ``MutationObserver``), so the
        wait ends with the change that makes it true.

        Raises:
            TimeoutError: Still false after ``timeout`` seconds.
        """
        script = f"""new Promise(resolve => {{
            const check = () => {{
                const v = ({predicate});
                if (v) {{ obs.disconnect(); resolve(v); }}
            }};
            const obs = new MutationObserver(check);
            obs.observe(document, {{subtree: true, childList: true, attributes: true,
                                    characterData: true}});
            check();
        }})"""
        return await self.evaluate(script, timeout=timeout)

    async def screenshot(self, *, full_page: bool = False) -> bytes:
        """A PNG of the page (the window, or the whole page with ``full_page``)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = await self.send("Page.getLayoutMetrics")
            size = metrics["cssContentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": size["width"],
                "height": size["height"],
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        shot = await self.send("Page.captureScreenshot", params)
        return base64.b64decode(shot["data"])


class Browser:
    """A headless Chromium process and its DevTools connection.

    Use :meth:`start` as an async context manager; it stops Chromium on exit.
    """

    def __init__(self, process: asyncio.subprocess.Process, http: aiohttp.ClientSession) -> None:
        self._process = process
        self._http = http
        self._session: _Session | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.stderr_tail: list[str] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def start(cls, *, window: tuple[int, int] = (1400, 1000)) -> AsyncIterator[Browser]:
        """Start Chromium and connect to it.

        Args:
            window: Window size in CSS pixels (screenshots have this size).

        Raises:
            BrowserError: Chromium is missing or did not start.
        """
        with tempfile.TemporaryDirectory(prefix="ci-chromium-") as profile:
            process = await asyncio.create_subprocess_exec(
                chromium_binary(),
                *FLAGS,
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={profile}",
                f"--window-size={window[0]},{window[1]}",
                "about:blank",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            http = aiohttp.ClientSession()
            browser = cls(process, http)
            try:
                await browser._connect()
                yield browser
            finally:
                await browser._close()

    async def _connect(self) -> None:
        assert self._process.stderr is not None
        url = ""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60):
                while not url:
                    line = await self._process.stderr.readline()
                    if not line:
                        break
                    text = line.decode(errors="replace").rstrip()
                    self.stderr_tail = [*self.stderr_tail[-20:], text]
                    found = _LISTENING.search(text)
                    url = found[1] if found else ""
        if not url:
            raise BrowserError("chromium did not start: " + "\n".join(self.stderr_tail))
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._drain()))
        ws = await self._http.ws_connect(url, max_msg_size=0)
        self._session = _Session(ws)
        self._tasks.append(loop.create_task(self._read(self._session)))

    async def _drain(self) -> None:
        assert self._process.stderr is not None
        async for line in self._process.stderr:
            self.stderr_tail = [*self.stderr_tail[-20:], line.decode(errors="replace").rstrip()]

    async def _read(self, session: _Session) -> None:
        async for message in session.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            if "id" in data:
                future = session.pending.pop(data["id"], None)
                if future is not None and not future.done():
                    if "error" in data:
                        future.set_exception(BrowserError(data["error"].get("message", "")))
                    else:
                        future.set_result(data.get("result", {}))
            elif (page := session.pages.get(data.get("sessionId", ""))) is not None:
                page._event(data["method"], data.get("params") or {})
        for future in session.pending.values():
            if not future.done():
                future.set_exception(BrowserError("the DevTools connection closed"))

    async def page(self) -> Page:
        """Open a tab with the Page, Runtime, Network and Log domains enabled."""
        assert self._session is not None
        target = await self._session.send("Target.createTarget", {"url": "about:blank"})
        attached = await self._session.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        page = Page(self._session, attached["sessionId"])
        self._session.pages[attached["sessionId"]] = page
        for domain in ("Page", "Runtime", "Network", "Log"):
            await page.send(f"{domain}.enable")
        return page

    async def _close(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._session.send("Browser.close"), 10)
            await self._session.ws.close()
        await self._http.close()
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.terminate()
            try:
                await asyncio.wait_for(self._process.wait(), 10)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
