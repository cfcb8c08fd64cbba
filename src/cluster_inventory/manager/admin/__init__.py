"""The cluster manager's admin operations: one-shot steps the CLI runs."""
