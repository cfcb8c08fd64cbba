"""Build a small Go program that reads our cluster Secrets with Argo CD's own code.

The Argo CD sync writes Secrets in the shape of Argo CD >= 3.5 (``execProviderConfig``).
Rather than trust our reading of that shape, interop tests run ``argocd-check``: built
against ``github.com/argoproj/argo-cd/v3`` (:data:`ARGOCD_VERSION`), it loads the Secrets
(a ``SecretList`` as JSON on stdin) with ``util/db.SecretToCluster``, builds the REST config
with ``Cluster.RawRestConfig`` (which runs the exec plugin) and lists ConfigMaps in one
namespace of each member, printing one JSON result per Secret.

Argo CD's go.mod replaces its ``gitops-engine`` module by the in-tree ``./gitops-engine``,
which the module zip does not contain, and the pseudo-version it requires is not served by
the module proxy (403). The build therefore stands in the nearest served release of that
module, ``github.com/argoproj/argo-cd/gitops-engine/v3`` :data:`GITOPS_ENGINE_VERSION`,
adapted to v3.5's dependencies: its import path without ``/v3``, its ``go`` line lowered to
ours, ``k8s.io/kubernetes`` pinned to the version Argo CD v3.5 requires, and one call of
kubectl's ``RunCreate`` given the argument the older kubectl library wants. None of these
touch the code under test (``SecretToCluster``, ``RawRestConfig`` and the exec provider are
Argo CD's own, unchanged). Argo CD's own ``replace`` lines are copied from its go.mod.

The binary is cached under ``~/.cache/cluster-inventory/plugins/argocd-<version>/``; a cold
build downloads and compiles Argo CD's dependencies (several minutes on two cores).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

from cluster_inventory.testing.gobuild import (
    GoBuildError,
    _run,
    cache_root,
    go_env,
    install_once,
)
from cluster_inventory_workshop.upstream_crds import go_module_dir
from cluster_inventory_workshop.versions import ARGOCD_VERSION, GITOPS_ENGINE_VERSION

__all__ = ["ARGOCD_VERSION", "GITOPS_ENGINE_VERSION", "argocd_check"]

_ARGOCD = "github.com/argoproj/argo-cd/v3"
_ENGINE = "github.com/argoproj/argo-cd/gitops-engine"
_BINARY = "argocd-check"

_MAIN = """\
// argocd-check: load Argo CD cluster Secrets (a SecretList as JSON on stdin) with Argo CD's
// own conversion, build its REST config (the exec provider) and list ConfigMaps in the
// namespace given as the only argument on each member. One JSON result per Secret.
package main

import (
\t"context"
\t"encoding/json"
\t"fmt"
\t"os"

\t"github.com/argoproj/argo-cd/v3/util/db"
\tcorev1 "k8s.io/api/core/v1"
\tmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
\t"k8s.io/client-go/kubernetes"
)

type result struct {
\tSecret      string            `json:"secret"`
\tName        string            `json:"name"`
\tServer      string            `json:"server"`
\tLabels      map[string]string `json:"labels"`
\tExecCommand string            `json:"execCommand"`
\tExecConfig  json.RawMessage   `json:"execConfig,omitempty"`
\tInsecure    bool              `json:"insecure"`
\tConfigMaps  []string          `json:"configMaps"`
\tError       string            `json:"error,omitempty"`
}

func check(s *corev1.Secret, namespace string) result {
\tr := result{Secret: s.Name, ConfigMaps: []string{}}
\tc, err := db.SecretToCluster(s)
\tif err != nil {
\t\tr.Error = "SecretToCluster: " + err.Error()
\t\treturn r
\t}
\tr.Name, r.Server, r.Labels = c.Name, c.Server, c.Labels
\tr.Insecure = c.Config.TLSClientConfig.Insecure
\tif e := c.Config.ExecProviderConfig; e != nil {
\t\tr.ExecCommand = e.Command
\t\tif e.Config != nil {
\t\t\tr.ExecConfig = e.Config.Raw
\t\t}
\t}
\tcfg, err := c.RawRestConfig()
\tif err != nil {
\t\tr.Error = "RawRestConfig: " + err.Error()
\t\treturn r
\t}
\tclient, err := kubernetes.NewForConfig(cfg)
\tif err != nil {
\t\tr.Error = "client: " + err.Error()
\t\treturn r
\t}
\tctx := context.Background()
\tlisted, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
\tif err != nil {
\t\tr.Error = "list configmaps: " + err.Error()
\t\treturn r
\t}
\tfor _, cm := range listed.Items {
\t\tr.ConfigMaps = append(r.ConfigMaps, cm.Name)
\t}
\treturn r
}

func main() {
\tif len(os.Args) != 2 {
\t\tfmt.Fprintln(os.Stderr, "usage: argocd-check NAMESPACE < secretlist.json")
\t\tos.Exit(2)
\t}
\tvar list corev1.SecretList
\tif err := json.NewDecoder(os.Stdin).Decode(&list); err != nil {
\t\tfmt.Fprintln(os.Stderr, "decode stdin:", err)
\t\tos.Exit(2)
\t}
\tout := []result{}
\tfor i := range list.Items {
\t\tout = append(out, check(&list.Items[i], os.Args[1]))
\t}
\tif err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
\t\tos.Exit(1)
\t}
}
"""


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _engine_zip(env: dict[str, str], work: Path) -> Path:
    # `go mod download` fetches the zip, then refuses the module for its `go 1.27` line:
    # the zip is what is needed, so the refusal is expected and the file is checked instead.
    module = f"{_ENGINE}/v3"
    subprocess.run(
        ["go", "mod", "download", f"{module}@{GITOPS_ENGINE_VERSION}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    path = (
        Path(env["GOMODCACHE"]) / "cache" / "download" / module / "@v"
        / f"{GITOPS_ENGINE_VERSION}.zip"
    )  # fmt: skip
    if not path.is_file():
        raise GoBuildError(f"`go mod download {module}@{GITOPS_ENGINE_VERSION}` left no zip")
    return path


def _engine_tree(zip_path: Path, into: Path, go_line: str, kubernetes: str) -> None:
    prefix = f"{_ENGINE}/v3@{GITOPS_ENGINE_VERSION}/"
    with zipfile.ZipFile(zip_path) as archive:
        for name in archive.namelist():
            if not name.startswith(prefix) or name.endswith("/"):
                continue
            relative = name[len(prefix) :]
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if not (relative.endswith(".go") or relative == "go.mod"):
                target.write_bytes(archive.read(name))  # embedded and test data, as is
                continue
            text = archive.read(name).decode().replace(f"{_ENGINE}/v3", _ENGINE)
            if relative == "go.mod":
                text = re.sub(r"(?m)^go \d+\.\d+(\.\d+)?$", go_line, text)
                text = re.sub(r"(?m)^(\s+k8s\.io/kubernetes) v\S+", rf"\1 {kubernetes}", text)
            if relative == "pkg/utils/kube/resource_ops.go":
                # kubectl v0.36 (Argo CD v3.5's) still takes the cobra command.
                text = text.replace("opts.RunCreate(fact)", "opts.RunCreate(fact, nil)")
            target.write_text(text)


def argocd_check(*, progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of ``argocd-check``, building it on first use (cached).

    Args:
        progress: Called with short status lines while building.

    Returns:
        The executable. Run it as ``argocd-check NAMESPACE < secretlist.json``.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: A download or the build failed (the message carries ``go``'s output).
    """
    target = cache_root() / "plugins" / f"argocd-{ARGOCD_VERSION}" / _BINARY
    if _executable(target):
        return target
    work = cache_root() / "build" / f"argocd-check-{ARGOCD_VERSION}"

    def make() -> Path:
        env = go_env()
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        if progress:
            progress(f"resolving {_ARGOCD}@{ARGOCD_VERSION}")
        argo_mod = (go_module_dir(_ARGOCD, ARGOCD_VERSION) / "go.mod").read_text()
        go_line = next(iter(re.findall(r"(?m)^go \S+$", argo_mod)), "go 1.26")
        kubernetes = re.search(r"(?m)^\s+k8s\.io/kubernetes (v\S+)", argo_mod)
        if kubernetes is None:
            raise GoBuildError(f"{_ARGOCD}@{ARGOCD_VERSION}: go.mod names no k8s.io/kubernetes")
        replaces = "\n".join(
            block
            for block in re.findall(r"(?ms)^replace (?:\(.*?^\)|[^\n]*)", argo_mod)
            if "./gitops-engine" not in block
        )
        _engine_tree(_engine_zip(env, work), work / "gitops-engine", go_line, kubernetes[1])
        (work / "go.mod").write_text(
            "module cluster-inventory.local/argocd-check\n\n"
            f"{go_line}\n\nrequire {_ARGOCD} {ARGOCD_VERSION}\n\n{replaces}\n\n"
            f"replace {_ENGINE} => ./gitops-engine\n\n"
            f"replace k8s.io/kubernetes => k8s.io/kubernetes {kubernetes[1]}\n"
        )
        (work / "main.go").write_text(_MAIN)
        if progress:
            progress(f"building {_BINARY} against {_ARGOCD}@{ARGOCD_VERSION}")
        _run(["go", "mod", "tidy"], work, env, progress)
        staging = work / _BINARY
        _run(
            ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(staging), "."],
            work,
            env,
            progress,
        )
        return staging

    lock = cache_root() / "plugins" / ".build.lock"
    return install_once(make, target, name=_BINARY, lock=lock, work=work, progress=progress)
