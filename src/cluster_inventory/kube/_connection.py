"""A :class:`ClusterConnection`: everything needed to reach one kube-apiserver, in memory.

The value the client factory (:mod:`._client`) builds from a kubeconfig and turns into an
``ApiClient``; the TLS (:mod:`._tls`) and proxy (:mod:`._proxy`) helpers read it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cluster_inventory.shapes import RawCluster

__all__ = ["ClusterConnection"]


@dataclass(frozen=True, kw_only=True)
class ClusterConnection:
    """Everything needed to reach one kube-apiserver, held in memory.

    Attributes:
        server: Base URL, e.g. ``https://127.0.0.1:6443``.
        ca_data: PEM bytes of the CA bundle that signs the serving certificate, or None to
            use the system trust store.
        token: Static bearer token (never logged; excluded from ``repr``).
        client_cert_data: PEM client certificate.
        client_key_data: PEM client key (excluded from ``repr``).
        tls_server_name: Name to verify the serving certificate against, if not the host.
        insecure_skip_tls_verify: Skip verification of the serving certificate.
        proxy_url: Explicit proxy; when None, ``HTTPS_PROXY``/``NO_PROXY`` apply as in client-go.
        namespace: The kubeconfig context's namespace, if any (not used for connecting).
        name: A label for errors and logs (cluster or context name).
        exec_user: A kubeconfig exec user (``users[].user.exec``), run by
            :func:`cluster_inventory.credentials.hub_client`; :func:`new_client` refuses it.
        exec_cluster_config: The cluster's ``client.authentication.k8s.io/exec`` extension,
            handed to that plugin as ``spec.cluster.config``.
    """

    server: str
    ca_data: bytes | None = None
    token: str | None = field(default=None, repr=False)
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = field(default=None, repr=False)
    tls_server_name: str | None = None
    insecure_skip_tls_verify: bool = False
    proxy_url: str | None = None
    namespace: str | None = None
    name: str = ""
    exec_user: Mapping[str, Any] | None = field(default=None, repr=False, hash=False)
    exec_cluster_config: Any = field(default=None, repr=False, hash=False)

    def kubeconfig_cluster(self) -> RawCluster:
        """The kubeconfig ``clusters[].cluster`` entry that reaches this server (no user).

        ``server``, ``certificate-authority-data`` (base64 of :attr:`ca_data`),
        ``tls-server-name``, ``insecure-skip-tls-verify`` and ``proxy-url``, each only when
        set: what a kubeconfig written for another identity on the same cluster carries.
        """
        cluster: RawCluster = {"server": self.server}
        if self.ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_data).decode()
        if self.tls_server_name:
            cluster["tls-server-name"] = self.tls_server_name
        if self.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        if self.proxy_url:
            cluster["proxy-url"] = self.proxy_url
        return cluster
