"""The machinery of ``bench/fleet_scale.py``, by role (bench/ is on ``sys.path``: ``from _fleet...``).

- ``settings``: one invocation's timings, a run's names, the checkout's commit;
- ``profiles``, ``leases``: what the benchmark sees of the hub, by one watch each started
  before any replica (the profiles and their waiters; the shard group's Leases);
- ``namespaces``: a run's namespaces on the hub, the two floors measured in them, cleanup;
- ``scrapes``: the hub's request counts, the virtual-member proxies' counters, a replica's
  /metrics; ``meter``: CPU seconds of named processes as cores;
- ``replicas``: the ``cluster-inventory manager run --sharding`` processes;
- ``record``: the typed result records (one per phase, one per run) and their JSON;
- ``live``, ``phases``, ``overload``, ``takeover``, ``run``: one (N, R) run of the manager
  mode, phase by phase;
- ``figures``, ``checks``, ``table``, ``plot``, ``results``: what is derived from records,
  their sanity, the printed table, the plot, the results file.

The agent mode (``bench/_agents.py``) uses the shared pieces; nothing here imports it or
``fleet_scale``.
"""
