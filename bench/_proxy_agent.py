"""A member's agent end of the cluster proxy, alone: ``ProxyLink`` in a process of its own.

``python bench/_proxy_agent.py NAME MEMBER_SERVER HUB_KUBECONFIG PROXY_CA URL [URL...]`` runs
the agent's real tunnel code (``agent/proxy_link.py``) until SIGTERM: what the benchmark
measures is the data path, without the agent's reporting beside it.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.agent.proxy_link import ProxyLink


async def main(name: str, server: str, hub_kubeconfig: str, ca: str, urls: list[str]) -> None:
    connection = kube.connection_from_kubeconfig(Path(hub_kubeconfig))
    link = ProxyLink(
        name,
        tuple(urls),
        member_server=server,
        credential=lambda: connection,
        proxy_ca=Path(ca).read_bytes(),
    )
    task = asyncio.ensure_future(link.run())
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
