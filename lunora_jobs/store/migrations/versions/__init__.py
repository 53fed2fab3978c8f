"""Migration scripts (one per revision)."""
