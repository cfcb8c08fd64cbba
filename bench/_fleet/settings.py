"""One invocation's settings, a run's names and the checkout it ran from."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Timings of one invocation (seconds), printed with the results."""

    probe_interval: float
    lease_duration: float
    renew_interval: float
    rest: float
    changes: int
    timeout: float
    cpu_quota: float | None = None
    squeeze: float | None = None
    squeeze_for: float = 150.0


@dataclass(frozen=True, kw_only=True)
class RunNames:
    """The names one (N, R) run of the manager mode gives its objects on the hub.

    ``run`` is the cluster manager's name, its shard group and the inventory's cluster set;
    ``system`` holds the registrations and the shard Leases, ``inventory`` the profiles and
    token Secrets, ``floor`` the floor's profiles.
    """

    run: str
    system: str
    inventory: str
    floor: str

    @classmethod
    def of(cls, n: int, r: int, s: Settings) -> RunNames:
        """``fs{N}r{R}``, with ``q{quota x 100}`` and ``s{squeeze x 100}`` when they are set."""
        run = (
            f"fs{n}r{r}"
            + (f"q{round(s.cpu_quota * 100)}" if s.cpu_quota else "")
            + (f"s{round(s.squeeze * 100)}" if s.squeeze else "")
        )
        return cls(run=run, system=f"{run}-system", inventory=f"{run}-inv", floor=f"{run}-floor")


def commit() -> str | None:
    """The checkout's commit (``+`` when it has uncommitted changes), or None outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], check=False).returncode
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")
