"""The cluster manager's members: their connections, pool, accounts and agents' reports."""
