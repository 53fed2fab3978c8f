"""``agent_action_proposals``: provisioned with the rest, idempotently, and read over its indexes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.ddl import ensure_tables, index_names
from lunora_jobs.store.proposals import NewActionProposal, ProposalScope
from lunora_jobs.store.schema import threads
from lunora_jobs.store.sql import SqlProposalStore, create_engine
from lunora_jobs.store.sql._proposals.rows import discovery_query, expiry_query

pytestmark = pytest.mark.integration

INDEXES = {
    "agent_action_proposals_thread_id_actor_ref_created_at_idx",
    "agent_action_proposals_status_due_at_idx",
    "agent_action_proposals_status_expires_at_idx",
}


@pytest.mark.parametrize("fixture", ["sqlite_url", "pg_url", "mysql_url"])
def test_repeated_provisioning_is_a_no_op_that_keeps_proposals(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    engine = create_engine(request.getfixturevalue(fixture))
    try:
        # A fresh store provisions its own tables on first use.
        store = SqlProposalStore(engine)
        with pytest.raises(NotFoundError):  # no thread yet: the FK refuses the row
            store.create_action_proposal(NewActionProposal(ProposalScope(None, "a", "t"), "c", "tool", {}))
        with engine.begin() as conn:
            conn.execute(threads.insert().values(id="t", key="t", created_at=1, updated_at=1))
        p = store.create_action_proposal(NewActionProposal(ProposalScope(None, "a", "t"), "c", "tool", {}))
        assert ensure_tables(engine) == 0
        with engine.connect() as conn:
            assert {name.lower() for name in index_names(conn)} >= INDEXES
        assert store.get_action_proposal(p.scope, p.id) == p
    finally:
        engine.dispose()


def test_discovery_and_expiry_read_over_their_indexes(sqlite_url: str) -> None:
    engine = create_engine(sqlite_url)
    try:
        ensure_tables(engine)
        with engine.connect() as conn:
            for query, index in (
                (discovery_query(5, 16), "agent_action_proposals_status_due_at_idx"),
                (expiry_query(5, 10), "agent_action_proposals_status_expires_at_idx"),
            ):
                sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
                plan = " ".join(str(row[3]) for row in conn.execute(sa.text("EXPLAIN QUERY PLAN " + sql)))
                assert f"USING INDEX {index}" in plan, plan
    finally:
        engine.dispose()
