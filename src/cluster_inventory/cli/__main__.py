"""``python -m cluster_inventory.cli``."""

from cluster_inventory.cli import main

main()
