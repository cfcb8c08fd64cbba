"""Our plugin reads the token Secret through the hub kubeconfig's ``proxy-url``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.data.provider_files import PLUGIN
from tests.support.hub.published import PROFILE, Published
from tests.support.network.proxies import serve_proxy


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_plugin_reaches_the_hub_through_its_proxy_url(
    published: Published, tmp_path: Path, scheme: str
) -> None:
    doc = yaml.safe_load(published.hub.kubeconfig_path.read_text())
    info = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {"server": published.member.server, "config": {"clusterName": PROFILE}},
        },
    }
    async with serve_proxy(scheme) as proxy:
        for entry in doc["clusters"]:
            entry["cluster"]["proxy-url"] = proxy.url
        hub_config = tmp_path / "hub.yaml"
        hub_config.write_text(yaml.safe_dump(doc))
        proc = await asyncio.to_thread(
            subprocess.run,
            [str(PLUGIN), "--kubeconfig", str(hub_config), "-n", published.namespace],
            capture_output=True,
            text=True,
            env={**os.environ, "KUBERNETES_EXEC_INFO": json.dumps(info)},
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    credential = json.loads(proc.stdout)
    assert credential["status"]["token"]
    assert credential["status"]["expirationTimestamp"]
    hub = urlsplit(published.hub.server)
    assert f"{hub.hostname}:{hub.port}" in proxy.targets
