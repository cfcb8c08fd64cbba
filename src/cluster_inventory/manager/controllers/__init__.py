"""The cluster manager's controllers: each reconciles one kind of key."""
