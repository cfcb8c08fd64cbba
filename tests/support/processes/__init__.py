"""Our console scripts and other binaries run as processes, and what they leave running.

- :mod:`.cli`: a console script run as a user runs it (a subprocess with no standard input);
- :mod:`.binaries`: the pinned ``kubectl`` and ``promtool``;
- :mod:`.pids`: liveness of PIDs (a zombie is dead), control-plane PIDs, a run's own PIDs;
- :mod:`.wheel`: the wheel built once per session and installed in a fresh venv;
- :mod:`.prometheus`: a real Prometheus scraping loopback targets.
"""
