"""Harnesses on the session fleet's hub, each as the product or a user leaves it.

- :mod:`.manager`: a cluster manager running in the test's event loop (the ``harness`` fixture);
- :mod:`.inventory`: ClusterProfiles published the way a cluster manager publishes them;
- :mod:`.published`: a member token published with its profile and provider file;
- :mod:`.agents`: the hub side of an accepted agent member, and an agent run as a process;
- :mod:`.crd_versions`: CRDs as other tools (upstream v0.1.x, ``kubectl apply``) leave them;
- :mod:`.placements`: ClusterProfiles and Placements as a placement test writes them;
- :mod:`.manifests`: deploy/'s kustomize trees rendered and dry-run on the hub;
- :mod:`.member_outage`: a member of the test's own through an outage, under a cluster
  manager that a real Prometheus scrapes;
- :mod:`.sharded_replicas`: sharded cluster manager replicas as processes, each member in an
  inventory of its own.
"""
