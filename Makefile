# Two commands work on a fresh machine: `make demo` and `make test`.
# uv is installed with pip when missing; control-plane binaries are built once from Go
# modules into ~/.cache/cluster-inventory (minutes on first use, cached afterwards).
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")

.PHONY: setup assets chromium gnu-time image-tools demo test lint unit manifests demo-crds image

setup:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen

assets: setup
	$(UV) run cluster-inventory-workshop install-assets
	@command -v chromium >/dev/null 2>&1 || $(MAKE) --no-print-directory chromium
	@test -x /usr/bin/time || $(MAKE) --no-print-directory gnu-time
	@command -v buildah >/dev/null 2>&1 && command -v mmdebstrap >/dev/null 2>&1 || $(MAKE) --no-print-directory image-tools

# Debian's headless Chromium renders the conformance HTML report in its test (once).
chromium:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's chromium (the HTML report test renders with it)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "chromium is missing: run 'sudo apt-get install -y chromium' for the HTML report test"; \
	fi

# Debian's GNU time measures each command's own peak RSS in bench/cli_get.py (once).
gnu-time:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's time (bench/cli_get.py measures each command's peak RSS with it)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; \
	else \
		echo "GNU time is missing: run 'sudo apt-get install -y time' for bench/cli_get.py"; \
	fi

# The demo builds the control-plane binaries itself on first use, with a progress display.
demo: setup
	$(UV) run cluster-inventory demo $(ARGS)

lint: setup
	$(UV) run ruff check src workshop tests bench examples
	$(UV) run ruff format --check src workshop tests bench examples
	$(UV) run mypy
	$(UV) run lint-imports

# Two pytest workers (pytest-xdist), each with a session fleet of its own, whole files to
# a worker: one uses about one core, mostly waiting on its control planes' timers. Then the
# tests marked `alone` (the benchmarks' smoke runs: fleets of their own, CPU quotas) on a
# machine the rest no longer loads; a selection (ARGS) with none of them is no failure
# (docs/testing.md, "Two workers"). TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
test: assets lint
ifeq ($(TEST_WORKERS),0)
	$(UV) run pytest $(ARGS)
else
	@set +e; \
	$(UV) run pytest -n $(TEST_WORKERS) --dist loadfile -m "not alone" $(ARGS); parallel=$$?; \
	$(UV) run pytest -m alone $(ARGS); alone=$$?; \
	if [ $$parallel -eq 5 ] && [ $$alone -eq 5 ]; then echo "no test ran"; exit 5; fi; \
	for rc in $$parallel $$alone; do [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; done
endif

unit: setup
	$(UV) run pytest tests/unit $(ARGS)

# deploy/ is rendered from the Helm chart (charts/cluster-inventory); run after changing it.
manifests: setup
	$(UV) run cluster-inventory-workshop manifests

# The Kueue CRDs the demo ships (src/cluster_inventory/cli/demo/crds), copied from the pinned
# sigs.k8s.io/kueue module; run after changing KUEUE_VERSION.
demo-crds: setup
	$(UV) run cluster-inventory-workshop demo-crds

# The container image (image/Containerfile) without a daemon: Debian's buildah and mmdebstrap.
image-tools:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's buildah and mmdebstrap (the image build and its smoke test)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah mmdebstrap binutils >/dev/null; \
	else \
		echo "buildah or mmdebstrap is missing: run 'sudo apt-get install -y buildah mmdebstrap binutils'"; \
	fi

# dist/cluster-inventory-<version>.oci.tar, built and run as root (about a minute warm).
image: setup
	image/build.sh $(ARGS)
