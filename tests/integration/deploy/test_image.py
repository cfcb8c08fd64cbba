"""The container image's build script, as a smoke in the suite (``make image`` builds it all).

``image/build.sh --smoke`` runs the same steps as the full build up to the committed image:
the wheel, the cached Debian root filesystem with python3, the wheel and its dependencies
for that Python, the console scripts and bytecode; then it runs the entrypoint in that root
filesystem as user 65532. The full build adds buildah's copy, commit and run of the OCI
archive, about a minute of vfs copying on two cores, which the suite's budget leaves to
``make image``.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cluster_inventory import __version__
from tests.support import REPO


def test_the_image_root_filesystem_runs_the_entrypoint_as_non_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("image/build.sh needs root (mmdebstrap, chroot): run the suite as root")
    missing = [t for t in ("mmdebstrap", "buildah", "strip") if shutil.which(t) is None]
    assert not missing, f"{missing} missing: apt-get install -y buildah mmdebstrap binutils"
    done = subprocess.run(
        [str(REPO / "image" / "build.sh"), "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"cluster-inventory {__version__}"
    assert any("Usage: cluster-inventory manager run" in line for line in lines)
    assert lines.count(f"cluster-inventory {__version__}") == 2  # kubectl-inventory too
    size = int(lines[-1].split()[2])
    assert size < 256, f"the image's root filesystem grew to {size} MiB"
