#!/usr/bin/env bash
# Build the image of image/Containerfile without a container daemon or registry, from the
# same steps: the wheel (uv build), a minimal Debian bookworm root filesystem with python3
# (mmdebstrap, from Debian's own packages), the wheel and its dependencies as binary wheels
# (uv, for the image's Python and glibc), the console scripts of image/bin, then buildah
# (vfs storage, chroot isolation, in a throwaway storage root) commits it as an OCI archive
# and runs its entrypoint: `cluster-inventory --version` and `manager run --help`.
#
#   image/build.sh [OUTPUT.oci.tar]    default dist/cluster-inventory-<version>.oci.tar
#   image/build.sh --smoke             steps 1-4 only, then the entrypoint is run in the
#                                      assembled root filesystem with chroot (the suite runs
#                                      this: buildah's vfs copies and commit take about a
#                                      minute, a third of the warm CI budget left for it)
#
# Needs root and Debian's buildah and mmdebstrap (apt-get install buildah mmdebstrap).
# The Debian root filesystem is cached in ~/.cache/cluster-inventory/image/ by the day of
# the package snapshot it was built from; remove it to pick up Debian updates.
set -euo pipefail
cd "$(dirname "$0")/.."
SMOKE=false
if [ "${1:-}" = --smoke ]; then
  SMOKE=true
  shift
fi

SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PLATFORM=x86_64-manylinux_2_36 # bookworm's glibc 2.36
UV=${UV:-$(command -v uv || echo "python3 -m uv")}
CACHE=${CLUSTER_INVENTORY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-inventory}/image

for tool in mmdebstrap buildah strip; do
  command -v "$tool" >/dev/null || {
    echo "error: $tool is missing: apt-get install -y buildah mmdebstrap binutils" >&2
    exit 1
  }
done
[ "$(id -u)" = 0 ] || { echo "error: run as root (mmdebstrap and chroot need it)" >&2; exit 1; }

WORK=$(mktemp -d)
BUILDAH=(buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
cleanup() {
  "${BUILDAH[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

step() { printf '== %s\n' "$*" >&2; }

step "1. the wheel"
$UV build --wheel --out-dir "$WORK/dist" >/dev/null 2>&1
WHEEL=$(ls "$WORK"/dist/cluster_inventory-*.whl)
VERSION=$(basename "$WHEEL" | cut -d- -f2)
OUT=${1:-dist/cluster-inventory-$VERSION.oci.tar}
mkdir -p "$(dirname "$OUT")"

step "2. Debian $SUITE with python3 (mmdebstrap)"
# Bump the recipe number when the mmdebstrap command changes: the cache is keyed by it.
BASE=$CACHE/$SUITE-python3-r3.tar
if [ ! -s "$BASE" ]; then
  mkdir -p "$CACHE"
  # essential: dpkg and the Essential set (maintainer scripts need a shell); no apt, docs,
  # man pages or translations in the image.
  # The merged-usr hook sets up merged /usr itself and installs usr-is-merged, instead of
  # the usrmerge package whose conversion script pulls in perl (46 MiB).
  mmdebstrap --variant=essential --include=python3 --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
    "$SUITE" "$BASE.partial" "$MIRROR" >&2
  mv "$BASE.partial" "$BASE"
fi
ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"
tar -C "$ROOTFS" -xf "$BASE"
PY=$(chroot "$ROOTFS" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

step "3. cluster-inventory $VERSION and its dependencies for Python $PY"
SITE=/usr/local/lib/python$PY/dist-packages
# --link-mode copy: uv would otherwise hardlink files from its cache, which every venv on
# the machine shares, and strip below would then rewrite them in place under running
# processes.
$UV pip install --quiet --link-mode copy --target "$ROOTFS$SITE" --python-version "$PY" \
  --python-platform "$PLATFORM" --only-binary :all: --no-compile "$WHEEL" >&2
rm -rf "$ROOTFS$SITE/bin"
# Native extensions ship with debug information (uvloop alone: 13 MiB); nobody debugs them
# in the image.
find "$ROOTFS$SITE" -name '*.so' -links 1 -exec strip --strip-unneeded {} +
if [ -n "$(find "$ROOTFS$SITE" -name '*.so' -links +1)" ]; then
  echo "error: shared objects in the image are hardlinked elsewhere; not stripping them" >&2
  exit 1
fi

step "4. console scripts, bytecode"
install -m 0755 image/bin/* "$ROOTFS/usr/local/bin/"
chroot "$ROOTFS" /usr/bin/python3 -m compileall -q "$SITE"

SIZE=$(du -sm "$ROOTFS" | cut -f1)
if $SMOKE; then
  step "smoke: the entrypoint in the root filesystem (chroot, user 65532)"
  run() { chroot --userspec=65532:65532 "$ROOTFS" /usr/bin/env PYTHONDONTWRITEBYTECODE=1 "$@"; }
  run cluster-inventory --version
  HELP=$(COLUMNS=100 run cluster-inventory manager run --help)
  printf '%s\n' "$HELP" | head -n 6
  run kubectl-inventory --version
  echo "root filesystem: $SIZE MiB (smoke: no image committed)"
  exit 0
fi

step "5. buildah: from scratch, copy, config, commit"
CTR=$("${BUILDAH[@]}" from scratch)
"${BUILDAH[@]}" copy --quiet "$CTR" "$ROOTFS/" / >/dev/null
"${BUILDAH[@]}" config \
  --user 65532:65532 \
  --env PYTHONDONTWRITEBYTECODE=1 \
  --entrypoint '["cluster-inventory"]' \
  --cmd '["--help"]' \
  --label org.opencontainers.image.title=cluster-inventory \
  --label "org.opencontainers.image.version=$VERSION" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  "$CTR"
"${BUILDAH[@]}" commit --quiet --format oci "$CTR" "oci-archive:$OUT:$VERSION" >/dev/null

step "6. the image's entrypoint, run by buildah (chroot isolation, user 65532)"
RUN=$("${BUILDAH[@]}" from "oci-archive:$OUT:$VERSION")
run() { "${BUILDAH[@]}" run --isolation chroot --user 65532:65532 "$RUN" -- "$@"; }
run cluster-inventory --version
HELP=$(COLUMNS=100 run cluster-inventory manager run --help)
printf '%s\n' "$HELP" | head -n 6
for script in kubectl-inventory cluster-inventory-secretreader; do
  run ls -l "/usr/local/bin/$script"
done

ARCHIVE=$(du -m "$OUT" | cut -f1)
echo "image: $OUT (OCI archive $ARCHIVE MiB, root filesystem $SIZE MiB)"
