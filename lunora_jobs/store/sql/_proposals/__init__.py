"""``SqlProposalStore``: action proposals over SQL (the store, its rows, worker discovery)."""
