"""Build main packages of published Go modules through a generated wrapper module.

Nothing can be downloaded here but modules from the Go module proxy, so the control-plane
binaries (and, later, upstream interop plugins) are compiled from their modules. A wrapper
module requires the target module, imports the main packages from a ``tools`` file so that
``go mod tidy`` records every dependency, and builds with ``GOTOOLCHAIN=local``. Module and
build caches live under ``~/.cache/cluster-inventory/go`` so repeated builds take seconds.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cluster_inventory.testing.versions import MIN_GO_VERSION

__all__ = [
    "GoBuildError",
    "GoModuleBuild",
    "GoNotFoundError",
    "build_once",
    "build_source",
    "cache_root",
    "go_env",
    "install_once",
    "is_executable",
]

Progress = Callable[[str], None]

_GO_HINT = (
    "Go {need} or newer is needed to build the test assets from Go modules: install it "
    "from your distribution or from the Go project's downloads, put `go` on PATH, then run "
    "`cluster-inventory testing install-assets` (or `make assets`)."
)


@contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` so parallel processes build only once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class GoNotFoundError(RuntimeError):
    """``go`` is absent or older than the pinned modules need."""


class GoBuildError(RuntimeError):
    """A ``go`` command failed; the message carries the command and the tail of its output."""


def cache_root() -> Path:
    """Return the cache directory of this project.

    ``$CLUSTER_INVENTORY_CACHE_DIR``, else ``$XDG_CACHE_HOME/cluster-inventory``, else
    ``~/.cache/cluster-inventory``.
    """
    explicit = os.environ.get("CLUSTER_INVENTORY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cluster-inventory"


def go_env() -> dict[str, str]:
    """Return the environment every ``go`` command of ours runs with.

    Raises:
        GoNotFoundError: ``go`` is not on PATH or is older than ``MIN_GO_VERSION``.
    """
    need = ".".join(map(str, MIN_GO_VERSION))
    go = shutil.which("go")
    if go is None:
        raise GoNotFoundError("`go` was not found on PATH. " + _GO_HINT.format(need=need))
    root = cache_root() / "go"
    env = dict(os.environ)
    env.update(
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
        GOFLAGS="-mod=mod",
        GOMODCACHE=str(root / "mod"),
        GOCACHE=str(root / "build"),
    )
    out = subprocess.run(
        [go, "env", "GOVERSION"], env=env, capture_output=True, text=True, check=False
    )
    match = re.match(r"go(\d+)\.(\d+)", out.stdout.strip())
    if match is None or (int(match[1]), int(match[2])) < MIN_GO_VERSION:
        raise GoNotFoundError(
            f"`go` reports version {out.stdout.strip() or out.stderr.strip()!r}. "
            + _GO_HINT.format(need=need)
        )
    return env


def _run(args: Sequence[str], cwd: Path, env: Mapping[str, str], progress: Progress | None) -> str:
    lines: list[str] = []
    compiled = 0
    # The context closes the pipe: left to the garbage collector, it was a ResourceWarning
    # (an error under the suite's filterwarnings) in whichever test ran next.
    with subprocess.Popen(
        list(args),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if progress is not None and args[1] == "build" and not line.startswith(("go:", "#")):
                compiled += 1
                if compiled % 25 == 0:
                    progress(f"compiled {compiled} packages")
        code = proc.wait()
    if code != 0:
        tail = "\n".join(lines[-30:])
        raise GoBuildError(f"`{' '.join(args)}` in {cwd} exited with {code}:\n{tail}")
    return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class GoModuleBuild:
    """One published Go module and the main packages to build from it.

    Attributes:
        module: Module path, e.g. ``k8s.io/kubernetes``.
        version: Module version, e.g. ``v1.36.3``.
        packages: Mapping of binary name to main package path.
        staging_replace_version: If set, every ``k8s.io/*`` requirement at ``v0.0.0`` in the
            module's go.mod is replaced by that published version (Kubernetes' staging repos).
        ldflags: Extra ``-ldflags`` (``-s -w`` are always given).
        tags: Go build tags (``-tags``), e.g. to leave out optional plugins.
    """

    module: str
    version: str
    packages: Mapping[str, str]
    staging_replace_version: str | None = None
    ldflags: Sequence[str] = field(default_factory=tuple)
    tags: Sequence[str] = field(default_factory=tuple)

    def _go_mod(self, env: Mapping[str, str], workdir: Path, progress: Progress | None) -> str:
        lines = [
            "module cluster-inventory.local/assets",
            "",
            f"go {'.'.join(map(str, MIN_GO_VERSION))}",
            "",
            f"require {self.module} {self.version}",
            "",
        ]
        if self.staging_replace_version:
            info = json.loads(
                _run(
                    ["go", "mod", "download", "-json", f"{self.module}@{self.version}"],
                    workdir,
                    env,
                    progress,
                )
            )
            upstream = Path(info["GoMod"]).read_text()
            staging = sorted(
                set(re.findall(r"^\s+(k8s\.io/[\w.-]+) v0\.0\.0\s*$", upstream, re.MULTILINE))
            )
            lines += [f"replace {mod} => {mod} {self.staging_replace_version}" for mod in staging]
        return "\n".join(lines) + "\n"

    def build(self, out_dir: Path, work_dir: Path, progress: Progress | None = None) -> None:
        """Build every binary of ``packages`` into ``out_dir``.

        Args:
            out_dir: Directory that receives the binaries (created if absent).
            work_dir: Scratch directory for the wrapper module (recreated).
            progress: Called with short human-readable status lines.

        Raises:
            GoNotFoundError: No suitable ``go``.
            GoBuildError: Resolving or compiling failed.
        """
        env = go_env()
        shutil.rmtree(work_dir, ignore_errors=True)
        work_dir.mkdir(parents=True)
        if progress:
            progress(f"resolving {self.module}@{self.version}")
        (work_dir / "go.mod").write_text(self._go_mod(env, work_dir, progress))
        imports = "\n".join(f'\t_ "{pkg}"' for pkg in self.packages.values())
        (work_dir / "tools.go").write_text(
            f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
        )
        _run(["go", "mod", "tidy"], work_dir, env, progress)
        out_dir.mkdir(parents=True, exist_ok=True)
        ldflags = " ".join(["-s", "-w", *self.ldflags])
        for name, pkg in self.packages.items():
            if progress:
                progress(f"building {name} from {self.module}@{self.version}")
            _run(
                [
                    "go",
                    "build",
                    "-v",
                    "-trimpath",
                    f"-ldflags={ldflags}",
                    *([f"-tags={','.join(self.tags)}"] if self.tags else []),
                    "-o",
                    str(out_dir / name),
                    pkg,
                ],
                work_dir,
                env,
                progress,
            )


def is_executable(path: Path) -> bool:
    """``path`` is a file this process may run."""
    return path.is_file() and os.access(path, os.X_OK)


def install_once(
    make: Callable[[], Path],
    target: Path,
    *,
    name: str,
    lock: Path,
    work: Path,
    progress: Progress | None = None,
) -> Path:
    """Put what ``make`` builds at ``target``, once, however many processes ask at a time.

    Under the file ``lock``: a ``target`` another caller finished meanwhile is taken as it
    is; else ``make`` builds in ``work`` and returns the binary, which is renamed into place
    (so ``target`` is never partial) before ``work`` is removed.

    Args:
        make: Builds the binary inside ``work`` and returns its path.
        target: Where the binary goes.
        name: The program's name in the progress line.
        lock: The lock file.
        work: The scratch directory ``make`` builds in.
        progress: Called with a short status line once installed.

    Returns:
        ``target``.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (from ``make``).
        GoBuildError: The build failed (from ``make``).
    """
    with build_lock(lock):
        if is_executable(target):
            return target
        staging = make()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
        shutil.rmtree(work, ignore_errors=True)
        if progress:
            progress(f"{name} built into {target}")
        return target


def build_once(
    build: GoModuleBuild,
    binary: str,
    target: Path,
    *,
    lock: Path,
    work: Path,
    progress: Progress | None = None,
) -> Path:
    """Build ``binary`` of ``build`` into ``target`` unless a concurrent caller just did.

    Callers serialise on ``lock`` (a file lock, so across processes too); the binary appears
    at ``target`` only once complete (built in ``work``, then renamed).

    Args:
        build: The module and packages to build.
        binary: The name of the binary in ``build.packages`` to install.
        target: Where the binary goes.
        lock: The lock file.
        work: Scratch directory (removed afterwards).
        progress: Called with short status lines while building.

    Returns:
        ``target``.

    Raises:
        GoNotFoundError: ``go`` is absent or too old.
        GoBuildError: The build failed.
    """

    def make() -> Path:
        build.build(work / "bin", work / "module", progress)
        return work / "bin" / binary

    return install_once(make, target, name=binary, lock=lock, work=work, progress=progress)


def build_source(
    source: Path,
    target: Path,
    *,
    lock: Path,
    work: Path,
    requires: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> Path:
    """Build the Go main package in ``source`` into ``target``.

    For programs shipped inside this package (``testing/virtualmembers``,
    ``testing/accesscheck``): the ``.go`` files are copied into ``work`` beside a generated
    ``go.mod``, so nothing is written into the installed package. Without ``requires`` the
    program uses the standard library only and no module is downloaded; with it, ``go.mod``
    requires those module versions and ``go mod tidy`` resolves the rest from the module
    proxy. Callers key ``target`` by the sources' content (and the versions) so an edited
    program is rebuilt. Serialised on ``lock`` as :func:`build_once`.

    Args:
        source: Directory holding the main package's ``.go`` files.
        target: Where the program goes, named after it.
        lock: The file lock builds of ``target`` take turns on.
        work: Where the sources, ``go.mod`` and the binary are put together (then removed).
        requires: Module path to exact version, for programs that import modules.
        progress: Called with short status lines while resolving and building.

    Returns:
        ``target``, built now or by a concurrent caller.

    Raises:
        GoNotFoundError: ``go`` is absent or too old.
        GoBuildError: ``go mod tidy`` or ``go build`` failed.
    """

    def make() -> Path:
        env = go_env()
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for file in source.glob("*.go"):
            shutil.copyfile(file, work / file.name)
        require = "".join(f"require {mod} {ver}\n" for mod, ver in (requires or {}).items())
        (work / "go.mod").write_text(
            f"module cluster-inventory.local/{target.name}\n\n"
            f"go {'.'.join(map(str, MIN_GO_VERSION))}\n\n{require}"
        )
        if requires:
            if progress:
                progress(f"resolving {', '.join(f'{m}@{v}' for m, v in requires.items())}")
            _run(["go", "mod", "tidy"], work, env, progress)
        if progress:
            progress(f"building {target.name}")
        staging = work / target.name
        _run(
            ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(staging), "."],
            work,
            env,
            progress,
        )
        return staging

    return install_once(make, target, name=target.name, lock=lock, work=work, progress=progress)
