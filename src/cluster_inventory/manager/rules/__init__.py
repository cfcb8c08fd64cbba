"""The cluster manager's rules: pure decisions over plain data, no I/O."""
