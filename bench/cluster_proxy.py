"""The cluster proxy (issue 47): a consumer's cost through an agent's tunnel, against direct.

One member control plane on loopback (it is also the hub the proxy asks its reviews of), two
``cluster-inventory proxy run`` replicas as processes, the agent's tunnel code
(``bench/_proxy_agent.py``, ``agent/proxy_link.py``) in a process holding a tunnel to each,
and consumers in this process going to the member directly and through the proxy (a
CONNECT to ``bench:443``, TLS end to end with ``tls-server-name``), in the same run:

- a LIST of N ConfigMaps and a watch replaying 2N events: seconds each way, throughput ratio
  (targets >= 0.7);
- a small GET, sequential on one kept-alive connection: p50 and p99 each way, the added
  latency (targets p50 <= 1 ms, p99 <= 5 ms);
- 100 concurrent streams (100 connections at once) over the one tunnel;
- M simulated agents' idle tunnels on one replica: its RSS per tunnel (target <= 50 KiB)
  and its CPU over an idle window, per 1,000 tunnels (target <= 0.02 core);
- a replica killed (SIGKILL) behind a local round-robin "Service": seconds until the
  consumer's next GET succeeds (target <= 5 s).

Usage: uv run python bench/cluster_proxy.py [--configmaps 5000] [--gets 2000] [--tunnels 1000]
       uv run python bench/cluster_proxy.py --smoke
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import yaml
from _common import SMOKE_HELP, bounded, cpu_seconds, percentile, require, require_times, rss_mib

from cluster_inventory import kube
from cluster_inventory.proxy import Tunnel, dial
from cluster_inventory.testing import CertificateAuthority, ControlPlane, free_port

BENCH = Path(__file__).resolve().parent
MEMBER = "bench"
NS = "default"
GROUP = "bench:agents"


def _tls(kubeconfig: dict, ca: bytes | None = None) -> ssl.SSLContext:
    conn = kube.connection_from_kubeconfig(kubeconfig)
    if ca is not None:
        conn = kube.ClusterConnection(
            server=conn.server,
            ca_data=ca,
            client_cert_data=conn.client_cert_data,
            client_key_data=conn.client_key_data,
        )
    return kube.ssl_context_for(conn)


class Consumer:
    """GETs to the member, directly or through a proxy URL (aiohttp, the project's HTTP)."""

    def __init__(self, cp: ControlPlane, proxy: str | None) -> None:
        self.tls = _tls(cp.kubeconfig())
        self.proxy = proxy
        self.base = f"https://{MEMBER}" if proxy else cp.server
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=self.tls), trust_env=False
        )

    async def get(self, path: str) -> bytes:
        async with self.session.get(
            self.base + path,
            proxy=self.proxy,
            server_hostname="127.0.0.1" if self.proxy else None,
            timeout=aiohttp.ClientTimeout(total=60),
        ) as resp:
            body = await resp.read()
            require(resp.status == 200, f"GET {path} via {self.proxy or 'direct'}: {resp.status}")
            return body

    async def watch(self, rv: str, events: int) -> float:
        """Seconds to receive ``events`` events replayed from ``rv``."""
        path = f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={rv}"
        start = time.perf_counter()
        seen = 0
        async with self.session.get(
            self.base + path,
            proxy=self.proxy,
            server_hostname="127.0.0.1" if self.proxy else None,
            timeout=aiohttp.ClientTimeout(total=300),
        ) as resp:
            require(resp.status == 200, f"watch via {self.proxy or 'direct'}: {resp.status}")
            async for line in resp.content:
                event = json.loads(line)
                require(event["type"] != "ERROR", f"watch error: {event['object']}")
                seen += 1
                if seen >= events:
                    break
        return time.perf_counter() - start

    async def close(self) -> None:
        await self.session.close()


async def _listening(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            require(time.monotonic() < deadline, f"nothing listens on {port}")
            await asyncio.sleep(0.05)


def _proxy(cp: ControlPlane, work: Path, rid: str, count: int) -> tuple[subprocess.Popen, int, int]:
    tport, cport = free_port(), free_port()
    argv = [
        sys.executable, "-m", "cluster_inventory.cli", "proxy", "run",
        "--kubeconfig", str(cp.kubeconfig_path), "-n", NS,
        "--tunnel-bind-address", f"127.0.0.1:{tport}",
        "--connect-bind-address", f"127.0.0.1:{cport}",
        "--tls-cert-file", str(work / "tls.crt"), "--tls-key-file", str(work / "tls.key"),
        "--server-id", rid, "--server-count", str(count),
    ]  # fmt: skip
    log = (work / f"proxy-{rid}.log").open("wb")
    return subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL), tport, cport


@contextlib.asynccontextmanager
async def round_robin(backends: list[int]):
    """A local "Service": each connection goes to the first backend that accepts it."""

    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        for port in backends:
            try:
                ur, uw = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue
            await asyncio.gather(pipe(r, uw), pipe(ur, w))
            return
        w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def _timed(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _latency(consumer: Consumer, n: int) -> tuple[float, float]:
    path = f"/api/v1/namespaces/{NS}/configmaps/small"
    for _ in range(20):
        await consumer.get(path)  # warm: the connection, TLS, the server's caches
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await consumer.get(path)
        samples.append((time.perf_counter() - start) * 1000)
    return percentile(samples, 0.5), percentile(samples, 0.99)


async def _idle_tunnels(cp: ControlPlane, url: str, ca: bytes, n: int) -> list:
    async def one(i: int):
        name = f"sim-{i}"
        ctx = _tls(cp.kubeconfig(f"cluster-inventory:agent:{name}", [GROUP]), ca)
        d = await dial(url, name, ssl_context=ctx)
        box: list[Tunnel] = []

        async def refuse(stream_id: int) -> None:
            await box[0].refuse(stream_id, "simulated")

        tunnel = Tunnel(d.ws, label=name, on_open=refuse)
        box.append(tunnel)
        return d, tunnel, asyncio.ensure_future(tunnel.run())

    return await bounded([one(i) for i in range(n)], limit=16)


async def main(args: argparse.Namespace) -> None:
    n_cm, n_gets, n_tunnels = args.configmaps, args.gets, args.tunnels
    if args.smoke:
        n_cm, n_gets, n_tunnels = 100, 50, 20
    work = Path(tempfile.mkdtemp(prefix="ci-bench-proxy-"))
    ca = CertificateAuthority("bench-proxy-ca")
    ca.serving_pair("127.0.0.1").write(work / "tls.crt", work / "tls.key")
    cp = ControlPlane("bench-proxy")
    await cp.start()
    procs: list[subprocess.Popen] = []
    try:
        async with await cp.client() as admin:
            role = {"metadata": {"name": "bench-agents", "namespace": NS}, "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["update"]}
            ]}  # fmt: skip
            await kube.apply(admin, kube.ROLES, role, field_manager="bench")
            binding = {
                "metadata": {"name": "bench-agents", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-agents"},
                "subjects": [{"kind": "Group", "name": GROUP, "apiGroup": "rbac.authorization.k8s.io"}],
            }  # fmt: skip
            await kube.apply(admin, kube.ROLE_BINDINGS, binding, field_manager="bench")
            small = {"metadata": {"name": "small", "namespace": NS}, "data": {"k": "v"}}
            await kube.apply(admin, kube.CONFIG_MAPS, small, field_manager="bench")
            listed = await kube.request(admin, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=1")
            rv0 = listed["metadata"]["resourceVersion"]
            data = {"payload": "x" * 512}

            def cm(i: int) -> dict:
                return {"metadata": {"name": f"cm-{i:05d}", "namespace": NS}, "data": data}

            await bounded(
                [kube.create(admin, kube.CONFIG_MAPS, cm(i)) for i in range(n_cm)], limit=32
            )
            patch = {"data": {"payload": "y" * 512}}
            await bounded(
                [kube.apply(admin, kube.CONFIG_MAPS, {**cm(i), **patch}, field_manager="bench")
                 for i in range(n_cm)], limit=32,
            )  # fmt: skip
        a, a_tunnel, a_connect = _proxy(cp, work, "a", 2)
        b, b_tunnel, b_connect = _proxy(cp, work, "b", 2)
        procs += [a, b]
        for port in (a_tunnel, a_connect, b_tunnel, b_connect):
            await _listening(port)
        hub_kc = work / "agent.kubeconfig"
        hub_kc.write_text(
            yaml.safe_dump(cp.kubeconfig(f"cluster-inventory:agent:{MEMBER}", [GROUP]))
        )
        (work / "ca.crt").write_bytes(ca.cert_pem)
        agent = subprocess.Popen(
            [sys.executable, str(BENCH / "_proxy_agent.py"), MEMBER, cp.server, str(hub_kc),
             str(work / "ca.crt"), f"wss://127.0.0.1:{a_tunnel}", f"wss://127.0.0.1:{b_tunnel}"],
            stdin=subprocess.DEVNULL, stdout=(work / "agent.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs.append(agent)
        async with round_robin([a_connect, b_connect]) as service:
            direct = Consumer(cp, None)
            proxied = Consumer(cp, f"http://127.0.0.1:{service}")
            deadline = time.monotonic() + 30
            while True:  # until the agent holds its tunnels
                try:
                    await proxied.get("/version")
                    break
                except (SystemExit, aiohttp.ClientError):
                    require(time.monotonic() < deadline, "the agent's tunnel did not come up")
                    await asyncio.sleep(0.1)
            runs = 1 if args.smoke else 3
            list_path = f"/api/v1/namespaces/{NS}/configmaps"
            list_direct = await _timed(lambda: direct.get(list_path), runs)
            list_proxy = await _timed(lambda: proxied.get(list_path), runs)
            events = 2 * n_cm
            watch_direct = statistics.median([await direct.watch(rv0, events) for _ in range(runs)])
            watch_proxy = statistics.median([await proxied.watch(rv0, events) for _ in range(runs)])
            d50, d99 = await _latency(direct, n_gets)
            p50, p99 = await _latency(proxied, n_gets)
            streams = Consumer(cp, f"http://127.0.0.1:{service}")
            many = await asyncio.gather(
                *(streams.get(f"/api/v1/namespaces/{NS}/configmaps/small") for _ in range(100))
            )
            await streams.close()
            require(len(many) == 100, "100 concurrent streams")

            # Idle tunnels on replica a.
            rss0, cpu_idle_window = rss_mib(a.pid), (3.0 if args.smoke else 30.0)
            sims = await _idle_tunnels(cp, f"wss://127.0.0.1:{a_tunnel}", ca.cert_pem, n_tunnels)
            await asyncio.sleep(2)
            rss1 = rss_mib(a.pid)
            cpu0 = cpu_seconds(a.pid)
            await asyncio.sleep(cpu_idle_window)
            cpu1 = cpu_seconds(a.pid)
            alive = sum(1 for _, t, _ in sims if t.close_reason is None)
            require(alive == n_tunnels, f"{alive} of {n_tunnels} idle tunnels still open")
            for d, t, task in sims:
                await t.close("bench over")
                await d.close()
                task.cancel()

            # Replica a killed: the consumer's next connection goes to b.
            a.send_signal(signal.SIGKILL)
            killed = time.perf_counter()
            while True:
                try:
                    await proxied.get("/version")
                    break
                except (TimeoutError, SystemExit, aiohttp.ClientError):
                    require(time.perf_counter() - killed < 30, "no consumer GET within 30 s")
                    await asyncio.sleep(0.05)
            back = time.perf_counter() - killed
            await direct.close()
            await proxied.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
            if p.poll() is None:
                p.kill()
        await cp.stop()
        shutil.rmtree(work, ignore_errors=True)
    require_times(
        list_direct=list_direct, list_proxy=list_proxy, watch_direct=watch_direct,
        watch_proxy=watch_proxy, back=back,
    )  # fmt: skip
    kib_per_tunnel = max(0.0, (rss1 - rss0) * 1024 / n_tunnels)
    core_per_1000 = (cpu1 - cpu0) / cpu_idle_window * 1000 / n_tunnels
    rows = [
        (f"LIST of {n_cm} ConfigMaps, s (direct / proxy)", f"{list_direct:.3f} / {list_proxy:.3f}",
         f"throughput {list_direct / list_proxy:.2f}x direct (target >= 0.7)"),
        (f"watch of {events} events, s (direct / proxy)", f"{watch_direct:.3f} / {watch_proxy:.3f}",
         f"throughput {watch_direct / watch_proxy:.2f}x direct (target >= 0.7)"),
        ("small GET p50, ms (direct / proxy)", f"{d50:.2f} / {p50:.2f}",
         f"added {p50 - d50:.2f} ms (target <= 1)"),
        ("small GET p99, ms (direct / proxy)", f"{d99:.2f} / {p99:.2f}",
         f"added {p99 - d99:.2f} ms (target <= 5)"),
        ("concurrent streams over one tunnel", "100", "all answered 200"),
        (f"RSS per idle tunnel ({n_tunnels} tunnels), KiB", f"{kib_per_tunnel:.1f}", "target <= 50"),
        (f"CPU of {n_tunnels} idle tunnels over {cpu_idle_window:g} s, core per 1,000",
         f"{core_per_1000:.4f}", "target <= 0.02"),
        ("replica killed: consumer back after, s", f"{back:.2f}", "target <= 5"),
    ]  # fmt: skip
    print("| figure | value | against the target |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configmaps", type=int, default=5000)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--tunnels", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    asyncio.run(main(parser.parse_args()))
