"""Fleet configuration is checked before anything starts."""

from __future__ import annotations

import pytest

from cluster_inventory.testing import Fleet


@pytest.mark.parametrize("members", [["a", "a"], ["hub"], ["Bad_Name"], ["x" * 64]])
def test_fleet_refuses_bad_cluster_names(members: list[str]) -> None:
    with pytest.raises(ValueError, match=r"DNS-1123 label|must be unique"):
        Fleet(members)
