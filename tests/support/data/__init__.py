"""Documents and fakes tests build, most of them for unit tests without a server.

- :mod:`.strategies`: Hypothesis strategies for valid ClusterProfile documents;
- :mod:`.bad_input`: hostile input for the bad-input campaign (issue 22), and its tally;
- :mod:`.provider_files`: provider files (KEP-5339) whose plugin is our secretreader;
- :mod:`.certificates`: a self-signed client pair, and agent certificates of a chosen life;
- :mod:`.access_profiles`: a ClusterProfile publishing an exec access provider, its config;
- :mod:`.dashboard`: profile views and an in-memory hub state for the dashboard.
"""
