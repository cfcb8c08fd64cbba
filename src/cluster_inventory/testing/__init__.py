"""Real Kubernetes control planes on loopback for tests, benchmarks and the demo.

Nothing here is mocked: :class:`ControlPlane` runs etcd and kube-apiserver (and, on request,
kube-controller-manager) built from the Kubernetes Go modules; :class:`Fleet` runs a hub and
member clusters with the Cluster Inventory CRDs installed. Binaries are found the way envtest
finds them (``TEST_ASSET_*``, ``KUBEBUILDER_ASSETS``) or built once into
``~/.cache/cluster-inventory`` by :func:`install_assets` (Go needed only then). The pytest
plugin (:mod:`cluster_inventory.testing.pytest_plugin`) gives ``fleet``, ``hub`` and
``test_namespace`` fixtures to a project that enables it (``-p
cluster_inventory.testing.pytest_plugin``, or ``pytest_plugins`` in its ``conftest.py``);
nothing loads into a pytest run that does not ask.

What a harness user builds beside a fleet is public here too: :class:`CertificateAuthority`
(serving and client certificates the control planes trust, e.g. for a webhook),
:class:`ManagedProcess` and :func:`free_port` (a child process that dies with the test run),
and :class:`StartStop` (the async or sync context-manager shape of :class:`ControlPlane`);
:func:`netns_member` (:mod:`.netns`) runs a member in a network namespace of its own, which
nothing on the host routes to (a member behind NAT, reached by its agent), and
:func:`serve_forward` is the port forward that bridges it.

What only this repository's tests and benches use (virtual members, upstream builders, interop
checks, chart and browser helpers) is the workshop, ``cluster_inventory_workshop``, kept out
of the wheel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cluster_inventory._lazy import lazy_exports

if TYPE_CHECKING:
    from cluster_inventory.testing._certs import CertificateAuthority, KeyPair
    from cluster_inventory.testing._forward import pipe, serve_forward
    from cluster_inventory.testing._lifecycle import StartStop
    from cluster_inventory.testing._process import ManagedProcess, free_port
    from cluster_inventory.testing.assets import (
        BINARIES,
        AssetNotFoundError,
        assets_dir,
        find_binary,
        install_assets,
        missing_binaries,
    )
    from cluster_inventory.testing.controlplane import (
        DEFAULT_CONTROLLERS,
        SIGNER_CONTROLLER,
        ControlPlane,
        ControlPlaneError,
        Etcd,
    )
    from cluster_inventory.testing.fleet import (
        Fleet,
        KeptFleetError,
        start_detached_member,
        stop_detached,
        stop_detached_member,
    )
    from cluster_inventory.testing.gobuild import GoBuildError, GoNotFoundError, cache_root
    from cluster_inventory.testing.netns import (
        NetnsMember,
        NetnsMemberError,
        NetnsRefusedError,
        netns_member,
        netns_refused,
    )

__all__ = [
    "BINARIES",
    "DEFAULT_CONTROLLERS",
    "SIGNER_CONTROLLER",
    "AssetNotFoundError",
    "CertificateAuthority",
    "ControlPlane",
    "ControlPlaneError",
    "Etcd",
    "Fleet",
    "GoBuildError",
    "GoNotFoundError",
    "KeptFleetError",
    "KeyPair",
    "ManagedProcess",
    "NetnsMember",
    "NetnsMemberError",
    "NetnsRefusedError",
    "StartStop",
    "assets_dir",
    "cache_root",
    "find_binary",
    "free_port",
    "install_assets",
    "missing_binaries",
    "netns_member",
    "netns_refused",
    "pipe",
    "serve_forward",
    "start_detached_member",
    "stop_detached",
    "stop_detached_member",
]

# Where each public name lives. Resolved on first use (PEP 562): enabling the pytest plugin, or
# reading the asset paths, must not import aiohttp and the Kubernetes client before a test asks
# for a control plane.
_WHERE = {
    "ManagedProcess": "_process",
    "free_port": "_process",
    "CertificateAuthority": "_certs",
    "KeyPair": "_certs",
    "StartStop": "_lifecycle",
    "BINARIES": "assets",
    "AssetNotFoundError": "assets",
    "assets_dir": "assets",
    "find_binary": "assets",
    "install_assets": "assets",
    "missing_binaries": "assets",
    "DEFAULT_CONTROLLERS": "controlplane",
    "SIGNER_CONTROLLER": "controlplane",
    "ControlPlane": "controlplane",
    "ControlPlaneError": "controlplane",
    "Etcd": "controlplane",
    "Fleet": "fleet",
    "KeptFleetError": "fleet",
    "start_detached_member": "fleet",
    "stop_detached": "fleet",
    "stop_detached_member": "fleet",
    "GoBuildError": "gobuild",
    "GoNotFoundError": "gobuild",
    "cache_root": "gobuild",
    "pipe": "_forward",
    "serve_forward": "_forward",
    "NetnsMember": "netns",
    "NetnsMemberError": "netns",
    "NetnsRefusedError": "netns",
    "netns_member": "netns",
    "netns_refused": "netns",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
