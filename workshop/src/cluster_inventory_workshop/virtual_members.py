"""Thousands of distinct member clusters over a few real kube-apiservers.

A cluster manager at scale must be measured against thousands of members, and a 2-core
machine runs only a handful of control planes. :class:`VirtualMembers` starts a small Go
reverse proxy (``virtualmembers/main.go``, standard library only, built on first use into
``~/.cache/cluster-inventory``) that serves ``https://127.0.0.1:PORT/members/<n>/...`` and
forwards every request to real member ``n mod M``: a real kube-apiserver authenticates,
authorizes and answers each one. Two answers differ per virtual member, which is what makes
it a member of its own: the ``kube-system`` namespace UID (the member id,
:func:`member_id`) and the ClusterProperty objects it lists and watches (those labelled
:data:`LABEL_VIRTUAL_MEMBER` ``all`` or ``<n>``).

What it cannot show: members over one real apiserver share its load and its health (stop
it and all of them fail); TLS client certificates end at the proxy, so virtual members
authenticate with a bearer token. Path-prefixed servers are also what Rancher and OCM's
cluster-proxy hand out, so every client of ours must keep the prefix (``docs/testing.md``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import resource
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.kubeconfig import one_cluster_document
from cluster_inventory.testing import CertificateAuthority, ManagedProcess, StartStop, free_port
from cluster_inventory.testing.controlplane import ControlPlane, start_timeout, wait_http_ok
from cluster_inventory.testing.fleet import Fleet
from cluster_inventory_workshop.virtual_members_proxy import member_id, virtual_members_binary

__all__ = [
    "LABEL_VIRTUAL_MEMBER",
    "VirtualMembers",
    "member_id",
    "virtual_members_binary",
]

#: Label of a ClusterProperty on a real member: ``all`` (every virtual member over it sees
#: the property) or the index of the one virtual member that does.
LABEL_VIRTUAL_MEMBER = "testing.cluster-inventory.dev/virtual-member"

_ACCOUNT = "cluster-inventory-virtual-members"
_ACCOUNT_NAMESPACE = "kube-system"
_FIELD_MANAGER = "cluster-inventory-testing"
#: Connections each virtual member is expected to hold (a watch and a probe) and the
#: descriptors a proxy process keeps for itself and its upstreams.
_CONNECTIONS_PER_MEMBER = 2
_SPARE_DESCRIPTORS = 1024
#: Requested token lifetime; the fleet's apiservers set no --service-account-max-token-
#: expiration, so they grant it as asked (the returned expiry is the server's word).
_TOKEN_SECONDS = 7 * 24 * 3600


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class VirtualMembers(StartStop):
    """``count`` virtual members served by one proxy over the real members of a fleet.

    Virtual member ``n`` is ``https://127.0.0.1:PORT/members/<n>``, answered by real
    cluster ``n mod M``. Each real cluster gets a ServiceAccount bound to ``cluster-admin``
    (``kube-system/cluster-inventory-virtual-members``, left in place: another proxy over
    the same fleet may use it) whose token every virtual member over it uses.

    Each member is expected to hold two connections (a watch and a probe), and one process
    can open no more descriptors than the hard ``RLIMIT_NOFILE`` (20,000 on a typical CI
    machine; raising it needs ``CAP_SYS_RESOURCE``), so by default members are spread over
    as many proxy processes as that takes: member ``n`` is served by process
    ``n mod processes``, each on its own port.

    Use as ``async with VirtualMembers(fleet, 1000) as vm:``.

    Args:
        fleet: The fleet whose members serve the virtual members.
        count: Number of virtual members (at least 1).
        clusters: The real clusters to serve instead of ``fleet.members`` (for example
            ``[fleet.hub]`` to reach the hub through a path-prefixed URL).
        processes: Number of proxy processes; None derives it from the hard open-files
            limit as above.

    Raises:
        ValueError: ``count`` or ``processes`` is below 1, or there is no real cluster.
    """

    def __init__(
        self,
        fleet: Fleet,
        count: int,
        *,
        clusters: Sequence[ControlPlane] | None = None,
        processes: int | None = None,
    ) -> None:
        self.clusters = list(clusters) if clusters is not None else list(fleet.members.values())
        if count < 1 or not self.clusters or (processes is not None and processes < 1):
            raise ValueError(
                f"need count >= 1, processes >= 1 and a real cluster, got {count}, "
                f"{processes} over {clusters}"
            )
        self.count = count
        if processes is None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            per_process = max(1, (hard - _SPARE_DESCRIPTORS) // _CONNECTIONS_PER_MEMBER)
            if hard == resource.RLIM_INFINITY:
                per_process = count
            processes = math.ceil(count / per_process)
        self.ports: list[int] = [0] * processes
        self._ca = CertificateAuthority("virtual-members-ca")
        self._tokens: list[str] = []
        self._admins: list[kube.ApiClient] = []
        self._workdir: Path | None = None
        self._procs: list[ManagedProcess] = []

    # -- addresses and credentials ------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The first proxy process's own URL, e.g. ``https://127.0.0.1:41234``."""
        return self.base_url_of(0)

    def base_url_of(self, n: int) -> str:
        """The URL of the proxy process that serves virtual member ``n``."""
        return f"https://127.0.0.1:{self.ports[n % len(self.ports)]}"

    @property
    def ca_pem(self) -> bytes:
        """PEM bytes of the CA that signed the proxy's serving certificate."""
        return self._ca.cert_pem

    @property
    def processes(self) -> list[ManagedProcess]:
        """The running proxy processes (none before :meth:`start`)."""
        return list(self._procs)

    def _check(self, n: int) -> None:
        if not 0 <= n < self.count:
            raise IndexError(f"virtual member {n} out of range 0..{self.count - 1}")
        if not self._tokens:
            raise RuntimeError("VirtualMembers is not started")

    def name(self, n: int) -> str:
        """A cluster name for virtual member ``n``: ``vm-<n>``."""
        return f"vm-{n}"

    def server(self, n: int) -> str:
        """The URL of virtual member ``n``: ``https://127.0.0.1:PORT/members/<n>``."""
        return f"{self.base_url_of(n)}/members/{n}"

    def member_id(self, n: int) -> str:
        """Member id (``kube-system`` UID) of virtual member ``n``; see :func:`member_id`."""
        return member_id(n)

    def real(self, n: int) -> ControlPlane:
        """The real control plane that answers for virtual member ``n``."""
        return self.clusters[n % len(self.clusters)]

    def token(self, n: int) -> str:
        """The bearer token virtual member ``n`` is reached with.

        It is cluster-admin on the real cluster and shared by every virtual member over it.

        Raises:
            IndexError: ``n`` is out of range.
            RuntimeError: Not started.
        """
        self._check(n)
        return self._tokens[n % len(self.clusters)]

    def connection(self, n: int) -> kube.ClusterConnection:
        """Connection details of virtual member ``n`` (bearer token, the proxy's CA).

        Raises:
            IndexError: ``n`` is out of range.
            RuntimeError: Not started.
        """
        return kube.ClusterConnection(
            server=self.server(n), ca_data=self.ca_pem, token=self.token(n), name=self.name(n)
        )

    def kubeconfig(self, n: int) -> dict[str, Any]:
        """A kubeconfig dict for virtual member ``n``, like :meth:`ControlPlane.kubeconfig`.

        Raises:
            IndexError: ``n`` is out of range.
            RuntimeError: Not started.
        """
        return dict(
            one_cluster_document(
                name=self.name(n),
                cluster={"server": self.server(n), "certificate-authority-data": _b64(self.ca_pem)},
                user={"token": self.token(n)},
            )
        )

    async def client(self, n: int) -> kube.ApiClient:
        """A new ``ApiClient`` for virtual member ``n``; the caller closes it."""
        return await kube.new_client(self.connection(n))

    # -- properties ---------------------------------------------------------------------
    async def set_property(self, n: int, name: str, value: str) -> str:
        """Create or update a ClusterProperty only virtual member ``n`` sees (one write).

        ClusterProperty names are unique per real cluster, which many virtual members
        share, so the object is named ``<name>.vm-<n>`` on the real cluster and labelled
        ``LABEL_VIRTUAL_MEMBER=<n>``; virtual member ``n`` (and a cluster manager reading
        it) sees it under that name.

        Returns:
            The property's name as virtual member ``n`` sees it.

        Raises:
            IndexError: ``n`` is out of range.
            KubeAPIError: The real apiserver refused the write.
        """
        self._check(n)
        full = f"{name}.vm-{n}"
        await self._apply_property(self._admins[n % len(self.clusters)], full, value, str(n))
        return full

    async def set_shared_property(self, name: str, value: str) -> None:
        """Create or update ClusterProperty ``name``, seen by every virtual member.

        One write per real cluster, labelled ``LABEL_VIRTUAL_MEMBER=all``.

        Raises:
            KubeAPIError: A real apiserver refused the write.
        """
        await asyncio.gather(
            *(self._apply_property(admin, name, value, "all") for admin in self._admins)
        )

    async def _apply_property(
        self, admin: kube.ApiClient, name: str, value: str, label: str
    ) -> None:
        await kube.apply(
            admin,
            kube.CLUSTER_PROPERTIES,
            {
                "metadata": {"name": name, "labels": {LABEL_VIRTUAL_MEMBER: label}},
                "spec": {"value": value},
            },
            field_manager=_FIELD_MANAGER,
        )

    # -- lifecycle ----------------------------------------------------------------------
    async def _prepare(self, admin: kube.ApiClient) -> tuple[str, str]:
        """Ensure the ServiceAccount and its binding; return (token, kube-system UID)."""
        await kube.apply(
            admin,
            kube.SERVICE_ACCOUNTS,
            {"metadata": {"name": _ACCOUNT, "namespace": _ACCOUNT_NAMESPACE}},
            field_manager=_FIELD_MANAGER,
        )
        await kube.apply(
            admin,
            kube.CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": _ACCOUNT},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": _ACCOUNT, "namespace": _ACCOUNT_NAMESPACE}
                ],
            },
            field_manager=_FIELD_MANAGER,
        )
        minted = await kube.request_service_account_token(
            admin, _ACCOUNT_NAMESPACE, _ACCOUNT, expiration_seconds=_TOKEN_SECONDS
        )
        ns = await kube.get(admin, kube.NAMESPACES, "kube-system")
        return minted.token, str(ns["metadata"]["uid"])

    async def start(self) -> None:
        """Build the proxy if needed, prepare the real clusters and start the proxy.

        Raises:
            GoNotFoundError: ``go`` is absent (needed once, to build the proxy).
            GoBuildError: The proxy did not build.
            KubeAPIError: A real cluster refused the ServiceAccount, binding or token.
            ControlPlaneError: The proxy exited or did not answer in time (with its log).
        """
        if self._procs:
            return
        binary = await asyncio.to_thread(virtual_members_binary)
        self._workdir = Path(tempfile.mkdtemp(prefix="ci-virtual-members-"))
        try:
            self._admins = [await cp.client() for cp in self.clusters]
            prepared = await asyncio.gather(*(self._prepare(a) for a in self._admins))
            self._tokens = [token for token, _ in prepared]
            self._ca.serving_pair("127.0.0.1").write(
                self._workdir / "serving.crt", self._workdir / "serving.key"
            )
            config = {
                "certFile": str(self._workdir / "serving.crt"),
                "keyFile": str(self._workdir / "serving.key"),
                "propertyLabel": LABEL_VIRTUAL_MEMBER,
                "memberUIDs": [member_id(n) for n in range(self.count)],
                "upstreams": [
                    {"server": cp.server, "ca": cp.ca_pem.decode(), "kubeSystemUID": uid}
                    for cp, (_, uid) in zip(self.clusters, prepared, strict=True)
                ],
            }
            ctx = kube.ssl_context_for(
                kube.ClusterConnection(server="https://127.0.0.1", ca_data=self.ca_pem)
            )
            for i in range(len(self.ports)):
                self.ports[i] = free_port()
                path = self._workdir / f"config-{i}.json"
                path.write_text(json.dumps({**config, "listen": f"127.0.0.1:{self.ports[i]}"}))
                proc = ManagedProcess(
                    f"virtual-members-{i}",
                    [str(binary), f"-config={path}"],
                    self._workdir / f"virtualmembers-{i}.log",
                )
                self._procs.append(proc)
                proc.start()
            for i, proc in enumerate(self._procs):
                await wait_http_ok(
                    f"{self.base_url_of(i)}/healthz",
                    proc=proc,
                    timeout=start_timeout(),
                    ssl_ctx=ctx,
                )
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop the proxy, close the admin clients and remove the working directory."""
        await asyncio.gather(*(proc.stop() for proc in self._procs))
        self._procs = []
        for admin in self._admins:
            await admin.close()
        self._admins = []
        self._tokens = []
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
