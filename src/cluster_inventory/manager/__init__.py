"""manager: arrives with a later issue (see DESIGN.md)."""
