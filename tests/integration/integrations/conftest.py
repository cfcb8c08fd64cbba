"""The runtime tests' ``inventory`` fixture (real profiles, token Secrets, provider file)."""

from __future__ import annotations

from tests.integration.runtime.conftest import fleet_manager, inventory

__all__ = ["fleet_manager", "inventory"]
