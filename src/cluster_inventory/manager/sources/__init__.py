"""The cluster manager's registration sources: where it learns which members exist."""
