"""Upstream consumers run off-cluster, as processes on loopback, against the fleet.

- :mod:`.kueue`: Kueue's own manager (``sigs.k8s.io/kueue/cmd/kueue``);
- :mod:`.knative`: the Knative Operator (``knative.dev/operator/cmd/operator``).

What each needs to run outside a Pod is in its module docstring and ``docs/integrations.md``.
"""
