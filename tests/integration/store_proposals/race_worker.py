"""A separate OS process racing ``claim_next_action_proposal`` (driven by the contract suite).

Usage: ``python race_worker.py <database_url> <worker_id>``. Prints ``ready``, waits for a line on
stdin (the starting gun, so both processes start together), claims until nothing is left, then prints
one JSON line: the ids it won.
"""

from __future__ import annotations

import json
import sys

import sqlalchemy as sa

from lunora_jobs.store.sql import SqlProposalStore, create_engine


def main(url: str, worker_id: str) -> None:
    """Claim every proposal this process can win; report the ids."""
    engine = create_engine(url)
    store = SqlProposalStore(engine, auto_create_tables=False)
    # Warm the pool so connecting is not part of the race.
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    print("ready", flush=True)
    sys.stdin.readline()
    won: list[str] = []
    while (lease := store.claim_next_action_proposal(worker_id, lease_ms=600_000)) is not None:
        won.append(lease.proposal.id)
    print(json.dumps(won), flush=True)
    engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
