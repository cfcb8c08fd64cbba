"""Settings for the whole suite.

Hypothesis' per-example deadline (200 ms) is a wall-clock assertion: on a shared 2-core
machine that is compiling, one example can take 800 ms without anything being wrong. Tests
here never assert time, so the deadline is off for every property test.
"""

from hypothesis import settings

settings.register_profile("cluster-inventory", deadline=None)
settings.load_profile("cluster-inventory")
