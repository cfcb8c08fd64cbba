"""glibc's mmap threshold is fixed for long-running processes, unless the operator set it."""

from __future__ import annotations

import sys

import pytest

from cluster_inventory.kube import _malloc


def test_an_operators_setting_stands(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert _malloc.tune_malloc() is False


def test_not_linux_is_a_no_op(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _malloc.tune_malloc() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_on_glibc_the_threshold_is_fixed(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert _malloc.tune_malloc() is True
