"""One HTTP stack for product code: aiohttp direct, under kubernetes_asyncio, and httpx.

Starts one real kube-apiserver (``cluster_inventory.testing.ControlPlane``) and sends the
same GET (the ``default`` Namespace, as the admin user over TLS with a client certificate)
N times with C in flight, through three clients in turn, on the event loop the product
runs (``kube.run``: uvloop when installed):

- ``aiohttp``: one ``aiohttp.ClientSession``, the body decoded with ``json.loads``;
- ``aiohttp + kubernetes_asyncio``: ``kube.get`` on the ``ApiClient`` that ``kube.new_client``
  builds, as every hub and member client of the product is built;
- ``httpx``: one ``httpx.AsyncClient`` (HTTP/1.1, the extra ``cluster-inventory[httpx]``).

Each client gets a warm-up of C requests (connections opened), then ``--rounds`` rounds of N
requests each, the clients in turn (A B C, B C A, C A B, ...), so drift in the machine's
speed and the position in a round hit all three alike. It prints each client's median
requests per second over the rounds (with the spread), its ratio to aiohttp direct, and the
CPU time this process spent per request: the client's own cost, steadier than requests per
second on a shared machine, where the apiserver and other work take the same cores.
docs/architecture.md ("HTTP stack and proxies") quotes a run.

    uv run python bench/http_stack.py --requests 2000 --concurrency 50 --rounds 3
    uv run python bench/http_stack.py --smoke   (100 requests, 10 in flight, one round)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
from _common import SMOKE_HELP, bounded, require, require_times

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane

PATH = "/api/v1/namespaces/default"

Get = Callable[[], Awaitable[dict]]


async def rate(get: Get, requests: int, concurrency: int) -> tuple[float, float]:
    """``requests`` calls of ``get``, ``concurrency`` in flight.

    Returns:
        (requests per second, this process's CPU microseconds per request).
    """
    started, cpu = time.perf_counter(), time.process_time()
    results = await bounded((get() for _ in range(requests)), concurrency)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    require(
        all(r.get("metadata", {}).get("name") == "default" for r in results),
        "a GET did not return the default Namespace",
    )
    return requests / elapsed, cpu / requests * 1e6


async def main(requests: int, concurrency: int, rounds: int) -> None:
    hub = ControlPlane("bench-http")
    await hub.start()
    try:
        conn = hub.connection()
        ctx = kube.ssl_context_for(conn)
        session = aiohttp.ClientSession(
            base_url=hub.server, connector=aiohttp.TCPConnector(ssl=ctx, limit=100)
        )
        api = await kube.new_client(conn)
        client = httpx.AsyncClient(
            base_url=hub.server, verify=ctx, limits=httpx.Limits(max_connections=100)
        )

        async def via_aiohttp() -> dict:
            async with session.get(PATH) as response:
                response.raise_for_status()
                return json.loads(await response.read())

        async def via_kubernetes_asyncio() -> dict:
            return await kube.get(api, kube.NAMESPACES, "default")

        async def via_httpx() -> dict:
            response = await client.get(PATH)
            response.raise_for_status()
            return json.loads(response.content)

        stacks: dict[str, Get] = {
            "aiohttp": via_aiohttp,
            "aiohttp + kubernetes_asyncio": via_kubernetes_asyncio,
            "httpx": via_httpx,
        }
        try:
            for get in stacks.values():
                await rate(get, concurrency, concurrency)  # warm-up: open the connections
            rates: dict[str, list[float]] = {name: [] for name in stacks}
            cpus: dict[str, list[float]] = {name: [] for name in stacks}
            names = list(stacks)
            for i in range(rounds):
                for name in names[i % 3 :] + names[: i % 3]:  # each client first in turn
                    per_second, cpu_us = await rate(stacks[name], requests, concurrency)
                    rates[name].append(per_second)
                    cpus[name].append(cpu_us)
        finally:
            await session.close()
            await api.close()
            await client.aclose()
    finally:
        await hub.stop()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    cpu = {name: statistics.median(values) for name, values in cpus.items()}
    require_times(**{name.replace(" ", "_"): value for name, value in medians.items()})
    require_times(**{name.replace(" ", "_") + "_cpu": value for name, value in cpu.items()})
    base = medians["aiohttp"]
    print(
        f"{requests} GETs of one Namespace, {concurrency} in flight, median of {rounds} "
        f"round(s), one kube-apiserver on loopback (TLS, client certificate)"
    )
    print(
        f"{'client':<30} {'requests/s':>11} {'(min-max)':>13} {'vs aiohttp':>11} "
        f"{'client CPU us/request':>22}"
    )
    for name, value in medians.items():
        spread = f"{min(rates[name]):.0f}-{max(rates[name]):.0f}"
        print(f"{name:<30} {value:>11.0f} {spread:>13} {value / base:>10.2f}x {cpu[name]:>22.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.concurrency, args.rounds = 100, 10, 1
    kube.run(main(args.requests, args.concurrency, args.rounds))
