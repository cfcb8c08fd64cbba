"""A member's TLS handshake runs while the exec plugin does, unless it needs the credential.

``connect_access`` starts the client's first connection before the plugin has answered (a
bearer token is a header), and the first request takes that connection. A client
certificate is part of the handshake: that client connects only after the plugin. The
member is reached through a port forward on loopback that counts the connections it
accepted and the bytes the member sent back; the "plugin" is the cache's fetcher, held
until the test lets it answer.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from cluster_inventory import kube
from cluster_inventory.credentials import (
    ClusterAccess,
    CredentialCache,
    ExecPluginFailed,
    connect_access,
    load_provider_file,
    resolve_access,
)
from cluster_inventory.credentials._exec import ExecCredential
from cluster_inventory.testing import serve_forward
from tests.support.data.access_profiles import profile as access_profile
from tests.support.data.access_profiles import providers as access_providers
from tests.support.hub.published import Published
from tests.support.network.tarpit import serve_tarpit
from tests.support.waiting import eventually


@dataclass
class Forward:
    """A port forward to the member: what it accepted, what the member answered."""

    port: int = 0
    accepted: int = 0
    closed: int = 0
    from_member: int = 0


@pytest.fixture
async def forward(published: Published) -> AsyncIterator[Forward]:
    target = urlsplit(published.member.server)
    seen = Forward()

    async def dial() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(target.hostname, target.port)
        counting = asyncio.StreamReader()

        async def pump() -> None:
            while data := await reader.read(65536):
                seen.from_member += len(data)
                counting.feed_data(data)
            counting.feed_eof()
            seen.closed += 1

        pumps.add(asyncio.create_task(pump()))
        return counting, writer

    async def listen(handler):  # type: ignore[no-untyped-def]
        async def counted(reader, writer):  # type: ignore[no-untyped-def]
            seen.accepted += 1
            await handler(reader, writer)

        return await asyncio.start_server(counted, "127.0.0.1", 0)

    pumps: set[asyncio.Task[None]] = set()
    async with serve_forward(listen, dial) as server:
        seen.port = server.sockets[0].getsockname()[1]
        yield seen
    for task in pumps:
        task.cancel()
    await asyncio.gather(*pumps, return_exceptions=True)


def _access_through(published: Published, forward: Forward) -> ClusterAccess:
    profile = copy.deepcopy(published.profile)
    profile["status"]["accessProviders"][0]["cluster"]["server"] = (
        f"https://127.0.0.1:{forward.port}"
    )
    return resolve_access(profile, load_provider_file(published.provider_file))


class HeldPlugin:
    """A fetcher that answers ``credential`` once the test releases it."""

    def __init__(self, credential: ExecCredential | Exception) -> None:
        self.credential = credential
        self.release = asyncio.Event()
        self.asked = 0

    async def __call__(self, access: ClusterAccess) -> ExecCredential:
        self.asked += 1
        await self.release.wait()
        if isinstance(self.credential, Exception):
            raise self.credential
        return self.credential


async def _configmaps(client: kube.ApiClient, namespace: str) -> list[str]:
    listed = await kube.request(client, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    return [item["metadata"]["name"] for item in listed["items"]]


async def test_the_handshake_runs_while_a_bearer_token_plugin_does(
    published: Published, forward: Forward
) -> None:
    token = await published.mint()
    plugin = HeldPlugin(ExecCredential(token=token))
    cache = CredentialCache(fetch=plugin)
    connecting = asyncio.create_task(
        connect_access(_access_through(published, forward), cache=cache)
    )
    # The member answered the handshake while the plugin had not answered yet.
    await eventually(lambda: forward.from_member > 0, what="the member's TLS handshake reply")
    assert plugin.asked == 1 and not connecting.done()
    plugin.release.set()
    async with await connecting as client:
        assert "hello" in await _configmaps(client, published.namespace)
        assert "hello" in await _configmaps(client, published.namespace)
    # One connection: the one opened ahead carried the authenticated requests.
    assert forward.accepted == 1


async def test_a_certificate_credential_is_waited_for_before_its_handshake(
    published: Published, forward: Forward
) -> None:
    admin = published.member.connection("consumer-cert", groups=("system:masters",))
    assert admin.client_cert_data is not None and admin.client_key_data is not None
    plugin = HeldPlugin(
        ExecCredential(
            client_certificate_data=admin.client_cert_data,
            client_key_data=admin.client_key_data,
        )
    )
    cache = CredentialCache(fetch=plugin)
    connecting = asyncio.create_task(
        connect_access(_access_through(published, forward), cache=cache)
    )
    await eventually(lambda: forward.accepted == 1, what="the connection opened ahead")
    plugin.release.set()
    async with await connecting as client:
        # Listed as the certificate's user: the request did not go out on the connection
        # opened without the certificate, which was dropped.
        assert "hello" in await _configmaps(client, published.namespace)
        await eventually(lambda: forward.closed >= 1, what="the speculative connection closed")
        assert forward.accepted == 2


async def test_a_failing_plugin_leaves_no_connection_open(
    published: Published, forward: Forward
) -> None:
    plugin = HeldPlugin(ExecPluginFailed("secretreader", "secretreader", 1, "no such secret"))
    cache = CredentialCache(fetch=plugin)
    connecting = asyncio.create_task(
        connect_access(_access_through(published, forward), cache=cache)
    )
    await eventually(lambda: forward.accepted == 1, what="the connection opened ahead")
    plugin.release.set()
    with pytest.raises(ExecPluginFailed):
        await connecting
    await eventually(lambda: forward.closed == 1, what="the connection opened ahead closed")


async def test_a_silent_server_holds_a_request_no_longer_than_its_own_timeout() -> None:
    # The connection opened ahead hangs in its handshake (a server that accepts and never
    # answers); a request with a 1 s timeout must fail after about 1 s, not wait out the
    # connect-ahead's own bound.
    async with serve_tarpit() as tarpit:
        access = resolve_access(access_profile(server=tarpit.server), access_providers())
        cache = CredentialCache(fetch=lambda _: _credential("unused"))
        client = await connect_access(access, cache=cache)
        try:
            await eventually(lambda: tarpit.connections == 1, what="the connection opened ahead")
            started = time.monotonic()
            with pytest.raises(kube.KubeError):
                await kube.request(client, "GET", "/version", timeout=1.0)
            assert time.monotonic() - started < 5.0
        finally:
            await client.close()


async def _credential(token: str) -> ExecCredential:
    return ExecCredential(token=token)
