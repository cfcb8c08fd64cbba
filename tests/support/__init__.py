"""What the tests share, by role (``tests/support/README.md`` lists every module).

- :mod:`tests.support.hub`: harnesses on the session fleet's hub: a cluster manager in the
  test's event loop, published profiles, accepted agent members, CRDs as other tools leave them,
  placements, deploy/'s manifests;
- :mod:`tests.support.processes`: our console scripts, the wheel, kubectl, promtool and
  Prometheus run as processes, and the checks of what a process left running;
- :mod:`tests.support.network`: network faults and paths: Toxiproxy, a tarpit, forward
  proxies, a member in a network namespace, and the fault matrix built on them;
- :mod:`tests.support.data`: documents and fakes: Hypothesis strategies, the bad-input
  campaign's hostile input, provider files, certificates, profiles, the dashboard's fake state;
- :mod:`tests.support.waiting`: waiting for a condition on real servers, never a fixed sleep;
- :mod:`tests.support.consumers`: upstream consumers (Kueue, the Knative Operator) run
  off-cluster against the fleet.

Test code only: nothing here ships in the wheel, and conftest.py files stay thin by importing
from here.
"""

from __future__ import annotations

from pathlib import Path

#: The checkout's root directory (what ``uv build`` builds, and ``PYTHONPATH`` for ``tests``).
REPO = Path(__file__).resolve().parents[2]
