"""One real Kubernetes control plane on loopback: etcd + kube-apiserver (+ controller-manager).

Flags, certificate layout and readiness follow envtest (``pkg/envtest``) so that what
passes here behaves as it would under controller-runtime's test harness: RBAC authorization,
client-certificate authentication from a separate client CA, a service-account signing key
so the TokenRequest API works, and the ServiceAccount admission plugin off (no controller
creates default ServiceAccounts unless kube-controller-manager is asked for).

A bare apiserver does not aggregate the ``admin``/``edit``/``view`` ClusterRoles, collect
garbage or finish namespace deletion; pass ``controllers=`` to run kube-controller-manager
with just the controllers a test needs (``docs/testing.md``). With ``csrsigning`` among them,
kube-controller-manager signs with the apiserver's client CA, so a certificate it issues for a
``kubernetes.io/kube-apiserver-client`` CSR authenticates (``docs/agent.md``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from cluster_inventory import kube
from cluster_inventory.kubeconfig import one_cluster_document
from cluster_inventory.shapes import RawKubeconfig, RawUser
from cluster_inventory.testing._certs import CertificateAuthority, KeyPair
from cluster_inventory.testing._lifecycle import StartStop
from cluster_inventory.testing._process import ManagedProcess, free_port
from cluster_inventory.testing.assets import find_binary
from cluster_inventory.testing.etcd import (
    ControlPlaneError,
    Etcd,
    start_timeout,
    stop_timeout,
    wait_http_ok,
)

# Etcd and the readiness wait live in etcd.py; they are imported from here as before.
__all__ = [
    "DEFAULT_CONTROLLERS",
    "SIGNER_CONTROLLER",
    "ControlPlane",
    "ControlPlaneError",
    "Etcd",
    "start_timeout",
    "wait_http_ok",
]

#: Controllers that make a bare control plane behave like a real cluster for our tests.
DEFAULT_CONTROLLERS = (
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "clusterrole-aggregation",
)

#: The controller that signs approved ``kubernetes.io/kube-apiserver-client`` CSRs with the
#: client CA the apiserver trusts (how an agent's, or a bootstrap, certificate is issued).
SIGNER_CONTROLLER = "csrsigning"

_LOOPBACK = "127.0.0.1"


def _ensure_no_proxy() -> None:
    # A CI proxy must never see loopback traffic (aiohttp honours HTTPS_PROXY).
    for var in ("NO_PROXY", "no_proxy"):
        current = [p for p in os.environ.get(var, "").split(",") if p]
        for host in ("127.0.0.1", "localhost", "::1"):
            if host not in current:
                current.append(host)
        os.environ[var] = ",".join(current)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class ControlPlane(StartStop):
    """etcd + kube-apiserver (+ optional kube-controller-manager) on 127.0.0.1.

    Use as ``async with ControlPlane("hub") as cp:`` or, from synchronous code,
    ``with ControlPlane("hub") as cp:``. Stopping removes every process and the temporary
    directory.

    Args:
        name: Cluster name, used in the kubeconfig and messages.
        workdir: Directory for certificates, logs and data; a fresh temp dir if None (removed
            on stop; a given directory is kept).
        etcd: A shared, already started :class:`Etcd`; if None the control plane runs its own.
        controllers: kube-controller-manager controllers to run (None: no controller-manager).
            :data:`DEFAULT_CONTROLLERS` is a good set.
        extra_apiserver_args: More ``--flag=value`` arguments for kube-apiserver.
        extra_controller_manager_args: More ``--flag=value`` arguments for
            kube-controller-manager (a feature gate), with ``controllers``.
        detach: Let the processes outlive this Python process (``fleet up --keep``).

    Attributes:
        server: The apiserver URL, e.g. ``https://127.0.0.1:41234``.
        ca_pem: PEM bytes of the CA that signed the serving certificate.
        kubeconfig_path: Admin kubeconfig file (``kubectl --kubeconfig`` works with it).
    """

    def __init__(
        self,
        name: str = "cluster",
        *,
        workdir: Path | None = None,
        etcd: Etcd | None = None,
        controllers: Sequence[str] | None = None,
        extra_apiserver_args: Sequence[str] = (),
        extra_controller_manager_args: Sequence[str] = (),
        detach: bool = False,
    ) -> None:
        self.name = name
        self.detach = detach
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"ci-{name}-"))
        self._shared_etcd = etcd
        self._etcd: Etcd | None = etcd
        self.controllers = tuple(controllers) if controllers else ()
        self.extra_apiserver_args = tuple(extra_apiserver_args)
        self.extra_controller_manager_args = tuple(extra_controller_manager_args)
        self.port = 0
        self._apiserver: ManagedProcess | None = None
        self._kcm: ManagedProcess | None = None
        self._serving_ca = CertificateAuthority(f"{name}-serving-ca")
        self._client_ca = CertificateAuthority(f"{name}-client-ca")
        self._sa_signer = CertificateAuthority(f"{name}-service-account-signer")
        self._admin = self._client_ca.client_pair("admin", ("system:masters",))
        self.kubeconfig_path = self.workdir / "kubeconfig"
        self._started = False

    # -- properties ---------------------------------------------------------------------
    @property
    def server(self) -> str:
        """The apiserver URL."""
        return f"https://{_LOOPBACK}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        """PEM bytes of the serving CA."""
        return self._serving_ca.cert_pem

    @property
    def processes(self) -> list[ManagedProcess]:
        """Every process this control plane started (and still tracks)."""
        procs = [self._apiserver, self._kcm]
        if self._shared_etcd is None and self._etcd is not None:
            procs.append(self._etcd.process)
        return [p for p in procs if p is not None]

    @property
    def apiserver_process(self) -> ManagedProcess | None:
        """The kube-apiserver process (None before :meth:`start`)."""
        return self._apiserver

    def _client_pair(self, user: str, groups: Sequence[str]) -> KeyPair:
        if user == "admin":
            return self._admin
        return self._client_ca.client_pair(user, tuple(groups))

    def connection(self, user: str = "admin", groups: Sequence[str] = ()) -> kube.ClusterConnection:
        """Connection details for ``user`` (client certificate from the client CA).

        ``admin`` is in ``system:masters``; any other user has only what RBAC grants it.
        """
        pair = self._client_pair(user, groups)
        return kube.ClusterConnection(
            server=self.server,
            ca_data=self.ca_pem,
            client_cert_data=pair.cert_pem,
            client_key_data=pair.key_pem,
            name=self.name,
        )

    def kubeconfig(
        self,
        user: str = "admin",
        groups: Sequence[str] = (),
        *,
        token: str | None = None,
        namespace: str | None = None,
    ) -> RawKubeconfig:
        """A kubeconfig dict for ``user`` (client certificate), or for a bearer ``token``.

        Its context's namespace is ``namespace`` when given.
        """
        if token is not None:
            user_entry: RawUser = {"token": token}
        else:
            pair = self._client_pair(user, groups)
            user_entry = {
                "client-certificate-data": _b64(pair.cert_pem),
                "client-key-data": _b64(pair.key_pem),
            }
        return one_cluster_document(
            name=self.name,
            cluster={"server": self.server, "certificate-authority-data": _b64(self.ca_pem)},
            user=user_entry,
            user_name=user,
            namespace=namespace,
        )

    async def client(self, user: str = "admin", groups: Sequence[str] = ()) -> kube.ApiClient:
        """A new ``ApiClient`` for ``user``; the caller closes it."""
        return await kube.new_client(self.connection(user, groups))

    # -- lifecycle ----------------------------------------------------------------------
    def _write_certs(self) -> Path:
        certs = self.workdir / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        self._serving_ca.serving_pair(_LOOPBACK).write(
            certs / "apiserver.crt", certs / "apiserver.key"
        )
        (certs / "client-ca.crt").write_bytes(self._client_ca.cert_pem)
        if SIGNER_CONTROLLER in self.controllers:
            # The signer of approved client CSRs: the CA the apiserver trusts for clients.
            self._client_ca.issuer_pair().write(certs / "client-ca.crt", certs / "client-ca.key")
        self._sa_signer.issuer_pair().write(certs / "sa-signer.crt", certs / "sa-signer.key")
        (certs / "serving-ca.crt").write_bytes(self.ca_pem)
        return certs

    def _apiserver_argv(self, certs: Path) -> list[str]:
        assert self._etcd is not None
        return [
            str(find_binary("kube-apiserver")),
            f"--etcd-servers={self._etcd.url}",
            f"--etcd-prefix=/{self.name}",
            f"--cert-dir={certs}",
            f"--tls-cert-file={certs / 'apiserver.crt'}",
            f"--tls-private-key-file={certs / 'apiserver.key'}",
            f"--secure-port={self.port}",
            f"--bind-address={_LOOPBACK}",
            f"--advertise-address={_LOOPBACK}",
            "--endpoint-reconciler-type=none",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--disable-admission-plugins=ServiceAccount",
            "--authorization-mode=RBAC",
            f"--service-account-issuer=https://{_LOOPBACK}:{self.port}/",
            f"--service-account-key-file={certs / 'sa-signer.crt'}",
            f"--service-account-signing-key-file={certs / 'sa-signer.key'}",
            f"--client-ca-file={certs / 'client-ca.crt'}",
            "--profiling=false",
            "--v=0",
            *self.extra_apiserver_args,
        ]

    async def start(self) -> None:
        """Start every process and wait until the apiserver is ready.

        Ready means ``/readyz`` answers 200 to the admin and the ``default`` namespace exists,
        as in envtest; with controllers, also that they have done their first pass.

        Raises:
            AssetNotFoundError: A binary is missing (the message says how to install it).
            ControlPlaneError: A process exited or did not become ready in time; the message
                carries its last output. Anything already started is stopped again and a temp
                directory is removed.
        """
        if self._started:
            return
        _ensure_no_proxy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            if self._etcd is None:
                self._etcd = Etcd(
                    self.workdir / "etcd", name=f"{self.name}-etcd", detach=self.detach
                )
                await self._etcd.start()
            certs = self._write_certs()
            self.port = free_port()
            self._apiserver = ManagedProcess(
                f"{self.name}/kube-apiserver",
                self._apiserver_argv(certs),
                self.workdir / "kube-apiserver.log",
                detach=self.detach,
            )
            await self._start_apiserver()
            self.kubeconfig_path.touch(mode=0o600)
            self.kubeconfig_path.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
            if self.controllers:
                await self._start_controller_manager(certs)
            self._started = True
        except BaseException:
            await self.stop()
            raise

    async def _start_apiserver(self) -> None:
        assert self._apiserver is not None
        self._apiserver.start()
        ctx = kube.ssl_context_for(self.connection())
        await wait_http_ok(
            f"{self.server}/readyz", proc=self._apiserver, timeout=start_timeout(), ssl_ctx=ctx
        )
        async with await self.client() as api:
            deadline = time.monotonic() + start_timeout()
            while True:
                try:
                    await kube.get(api, kube.NAMESPACES, "default")
                    return
                except kube.KubeAPIError:
                    if time.monotonic() > deadline:
                        raise ControlPlaneError(
                            f"{self.name}: namespace default never appeared"
                        ) from None
                    await asyncio.sleep(0.05)

    async def _start_controller_manager(self, certs: Path) -> None:
        argv = [
            str(find_binary("kube-controller-manager")),
            f"--kubeconfig={self.kubeconfig_path}",
            f"--controllers={','.join(self.controllers)}",
            "--leader-elect=false",
            "--secure-port=0",
            f"--service-account-private-key-file={certs / 'sa-signer.key'}",
            f"--root-ca-file={certs / 'serving-ca.crt'}",
            "--use-service-account-credentials=false",
            "--v=0",
            *self.extra_controller_manager_args,
        ]
        if SIGNER_CONTROLLER in self.controllers:
            argv += [
                f"--cluster-signing-cert-file={certs / 'client-ca.crt'}",
                f"--cluster-signing-key-file={certs / 'client-ca.key'}",
            ]
        self._kcm = ManagedProcess(
            f"{self.name}/kube-controller-manager",
            argv,
            self.workdir / "kcm.log",
            detach=self.detach,
        )
        self._kcm.start()
        deadline = time.monotonic() + start_timeout()
        async with await self.client() as api:
            while True:
                if not self._kcm.running:
                    raise ControlPlaneError(
                        f"{self._kcm.name} exited; last output:\n{self._kcm.log_tail()}"
                    )
                if await self._controllers_settled(api):
                    return
                if time.monotonic() > deadline:
                    raise ControlPlaneError(
                        f"{self._kcm.name} did not settle; last output:\n{self._kcm.log_tail()}"
                    )
                await asyncio.sleep(0.1)

    async def _controllers_settled(self, api: kube.ApiClient) -> bool:
        with contextlib.suppress(kube.KubeAPIError):
            if "serviceaccount" in self.controllers:
                await kube.get(api, kube.SERVICE_ACCOUNTS, "default", "default")
            if "clusterrole-aggregation" in self.controllers:
                view = await kube.request(
                    api, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"
                )
                if not view.get("rules"):
                    return False
            return True
        return False

    async def stop_apiserver(self, *, kill: bool = False) -> None:
        """Stop only kube-apiserver (etcd keeps the data), to simulate an outage.

        Args:
            kill: SIGKILL instead of a graceful SIGTERM: the port closes at once, as when a
                machine dies, rather than after kube-apiserver's drain (it answers
                ``503 apiserver is shutting down`` meanwhile).
        """
        if self._apiserver is not None:
            await self._apiserver.stop(stop_timeout(), kill=kill)

    async def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port with the same certificates and data.

        Raises:
            ControlPlaneError: It did not become ready.
        """
        if self._apiserver is None:
            raise ControlPlaneError(f"{self.name}: start() was never called")
        await self._start_apiserver()

    async def _stop_processes(self) -> None:
        if self._kcm is not None:
            await self._kcm.stop(stop_timeout())
        if self._apiserver is not None:
            await self._apiserver.stop(stop_timeout())
        if self._shared_etcd is None and self._etcd is not None:
            await self._etcd.stop()

    async def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and remove the temp directory."""
        await self._stop_processes()
        self._started = False
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
