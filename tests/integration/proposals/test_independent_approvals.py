"""Independent action approvals through the real engine, on every store (memory, SQLite,
PostgreSQL, MariaDB), with the embedded in-process dispatcher and an injected clock.

The charge tool dedupes its side effect on ``ctx.idempotency_key`` (as a real payment call would);
``attempts`` counts every execution of its body, ``effects`` what actually happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from proposal_model import ChargeModel

from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.engine.actions import OUTCOME_KIND, proposal_store, report_outcome, wake_run_id
from lunora_jobs.errors import ConflictError, InvalidAgentOptionError, NotFoundError, ProposalExpiredError
from lunora_jobs.runtime import Lunora
from lunora_jobs.runtime.proposals_api import AuthorizeAction, owner_only
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.store.proposals import ActionProposal
from lunora_jobs.store.sql import create_store
from lunora_jobs.testing import FakeClock, RecordingModel
from lunora_jobs.tools import ToolContext, define_tool

pytestmark = pytest.mark.integration


@dataclass
class Ledger:
    """The charge tool's world: every attempt, and the effects deduped on the idempotency key."""

    attempts: list[str] = field(default_factory=list)
    effects: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    declined: bool = False
    """When set, the card is declined (the tool raises)."""


def _agent(ledger: Ledger, **options: Any) -> Any:
    def charge(args: dict[str, Any], ctx: ToolContext) -> str:
        ledger.attempts.append(ctx.idempotency_key)
        if ledger.declined:
            raise RuntimeError("card declined")
        ledger.effects.setdefault(ctx.idempotency_key, args["amount"])
        return f"charged {args['amount']}"

    def note(args: dict[str, Any], ctx: ToolContext) -> str:
        ledger.notes.append(args["value"])
        return f"noted {args['value']}"

    amount = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
    value = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    tools = [
        define_tool(name="charge_card", description="Charge the saved card.", input_schema=amount,
                    execute=charge, needs_approval=lambda i: i["amount"] > 5000),
        define_tool(name="note", description="Write a note.", input_schema=value, execute=note),
    ]
    return define_agent(name="payer", instructions="Test agent.", model=ChargeModel(), tools=tools,
                        action_approval_mode="independent", **options)


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mysql"])
def store_factory(request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[AgentStore] = []

    def make(clock: FakeClock) -> AgentStore:
        if request.param == "memory":
            store: AgentStore = InMemoryStore(clock=clock)
        else:
            fixture = {"sqlite": "sqlite_url", "postgresql": "pg_url", "mysql": "mysql_url"}[request.param]
            store = create_store(request.getfixturevalue(fixture), clock=clock)
        made.append(store)
        return store

    yield make
    for store in made:
        close = getattr(store, "close", None)
        if callable(close):
            close()


@dataclass
class World:
    app: Lunora
    ledger: Ledger
    clock: FakeClock
    model: RecordingModel


def _world(store_factory: Any, authorize: AuthorizeAction = owner_only, **options: Any) -> World:
    clock, ledger, model = FakeClock(), Ledger(), RecordingModel(ChargeModel())
    settings = Settings(openai_api_key=None, openai_base_url=None, proposal_lease_ms=10_000,
                        scheduler_thread=False)
    app = Lunora([_agent(ledger, **options)], store=store_factory(clock), settings=settings, model=model,
                 authorize_action=authorize)
    return World(app, ledger, clock, model)


def _only_proposal(w: World, thread: str, actor: str = "u7") -> ActionProposal:
    [proposal] = w.app.proposals.list(thread, actor=actor)
    return proposal


def test_a_run_proposes_keeps_going_and_finishes_then_an_approval_runs_the_tool_once(
    store_factory: Any,
) -> None:
    w = _world(store_factory)
    handle = w.app.agents.payer.run(input="charge 9000 and note hi", thread_key="t1", owner="u7")
    run = w.app.store.get_run(handle.id)
    assert run is not None and run.status == "completed"  # never hibernated
    assert w.ledger.attempts == [] and w.ledger.notes == ["hi"]
    assert run.result["text"].startswith("saw: The action 'charge_card' needs a human decision")
    proposal = _only_proposal(w, "t1")
    assert (proposal.status, proposal.tool_name) == ("pending", "charge_card")
    assert proposal.input == {"amount": 9000.0}
    assert (proposal.actor_ref, proposal.run_id, proposal.tenant_ref) == ("u7", handle.id, None)
    tool_msg = next(m for m in w.app.threads.messages("t1", viewer="u7") if m.role == "tool"
                    and m.name == "charge_card")
    assert proposal.id in str(tool_msg.content) and (tool_msg.metadata or {})["proposal_id"] == proposal.id

    assert w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7") == "applied"
    assert w.ledger.attempts == [proposal.idempotency_key]  # executed inline by the embedded dispatcher
    done = w.app.proposals.get("t1", proposal.id, actor="u7")
    assert (done.status, done.result, done.generation) == ("succeeded", "charged 9000.0", 1)
    outcome = [m for m in w.app.threads.messages("t1", viewer="u7")
               if (m.metadata or {}).get("kind") == OUTCOME_KIND]
    assert len(outcome) == 1 and "charged 9000.0" in str(outcome[0].content)
    assert outcome[0].metadata is not None and outcome[0].metadata["status"] == "succeeded"

    # The same decision again is a no-op; the other one a conflict; the tool still ran once.
    assert w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7") == "unchanged"
    with pytest.raises(ConflictError):
        w.app.proposals.decide("t1", proposal.id, approve=False, actor="u7")
    assert w.app.work_proposals().executed == []
    assert w.ledger.attempts == [proposal.idempotency_key]
    assert len([m for m in w.app.threads.messages("t1", viewer="u7")
                if (m.metadata or {}).get("kind") == OUTCOME_KIND]) == 1


def test_a_rejection_delivers_a_rejection_message_and_never_runs_the_tool(store_factory: Any) -> None:
    w = _world(store_factory)
    w.app.agents.payer.run(input="charge 7000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    outcome = w.app.proposals.decide("t1", proposal.id, approve=False, actor="u7", reason="too much")
    assert outcome == "applied"
    assert w.app.work_proposals().executed == []
    assert w.ledger.attempts == []
    assert w.app.proposals.get("t1", proposal.id, actor="u7").status == "rejected"
    last = w.app.threads.messages("t1", viewer="u7")[-1]
    assert last.role == "system" and "rejected by a human reviewer: too much" in str(last.content)
    # The next run on the thread reads the outcome in its prompt.
    w.app.agents.payer.run(input="hello", thread_key="t1", owner="u7")
    assert any(m["role"] == "system" and "rejected by a human reviewer" in str(m["content"])
               for m in w.model.calls[-1])


def test_possession_of_the_id_is_not_authorization(store_factory: Any) -> None:
    w = _world(store_factory)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    for actor, tenant in [("mallory", None), ("u7", "other-tenant"), ("", None)]:
        assert w.app.proposals.list("t1", actor=actor, tenant=tenant) == []
        with pytest.raises(NotFoundError):
            w.app.proposals.decide("t1", proposal.id, approve=True, actor=actor, tenant=tenant)
    w.app.agents.payer.run(input="hello", thread_key="t2", owner="mallory")
    with pytest.raises(NotFoundError):  # the right id, presented on the presenter's own thread
        w.app.proposals.decide("t2", proposal.id, approve=True, actor="mallory")
    assert w.ledger.attempts == [] and _only_proposal(w, "t1").status == "pending"


def test_the_app_hook_authorizes_another_actor(store_factory: Any) -> None:
    def managers(actor: str, proposal: ActionProposal) -> bool:
        return actor == proposal.actor_ref or actor == "manager"

    w = _world(store_factory, authorize=managers)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1", actor="manager")
    assert w.app.proposals.decide("t1", proposal.id, approve=True, actor="manager") == "applied"
    assert w.app.proposals.get("t1", proposal.id, actor="u7").decided_by == "manager"
    assert list(w.ledger.effects) == [proposal.idempotency_key]


def test_an_overdue_proposal_is_expired_by_the_tick_and_cannot_be_approved(store_factory: Any) -> None:
    w = _world(store_factory, proposal_ttl_s=60)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    w.clock.advance(59_999)
    assert w.app.work_proposals().expired == []
    w.clock.advance(1)
    assert w.app.work_proposals().expired == [proposal.id]
    with pytest.raises(ProposalExpiredError):
        w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7")
    assert w.ledger.attempts == []
    assert w.app.proposals.list("t1", actor="u7", decision="expired")[0].id == proposal.id


def test_a_dead_workers_lease_is_recovered_with_the_same_idempotency_key(store_factory: Any) -> None:
    w = _world(store_factory)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    # Record the decision straight on the store (as if the decider died before dispatching), then a
    # worker claims it and dies mid-execution: its lease is all that is left of it.
    store: Any = w.app.store
    store.decide_action_proposal(proposal.scope, proposal.id, "approved", decided_by="u7")
    dead = store.claim_next_action_proposal("dead-worker", 10_000)
    assert dead is not None and dead.generation == 1
    assert w.app.work_proposals().executed == []  # a live lease is respected
    w.clock.advance(10_000)
    [done] = w.app.work_proposals().executed
    assert (done.proposal_id, done.status) == (proposal.id, "succeeded")
    assert (done.generation, done.settle) == (2, "settled")
    assert w.ledger.attempts == [dead.idempotency_key] == [proposal.idempotency_key]


def test_an_independent_action_needs_an_owned_run(store_factory: Any) -> None:
    w = _world(store_factory)
    handle = w.app.agents.payer.run(input="charge 9000", thread_key="t-anon")
    run = w.app.store.get_run(handle.id)
    assert run is not None and run.status == "completed"
    assert "has no owner" in run.result["text"]
    store: Any = w.app.store
    assert store.claim_next_action_proposal("w", 1000) is None and w.ledger.attempts == []


def test_a_failing_tool_settles_failed_and_tells_the_thread(store_factory: Any) -> None:
    w = _world(store_factory)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    w.ledger.declined = True
    w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7")
    failed = w.app.proposals.get("t1", proposal.id, actor="u7")
    assert failed.status == "failed" and "card declined" in str(failed.error)
    last = w.app.threads.messages("t1", viewer="u7")[-1]
    assert "failed: RuntimeError: card declined" in str(last.content)


def _outcomes(w: World, thread: str) -> list[str]:
    return [str(m.content) for m in w.app.threads.messages(thread, viewer="u7")
            if (m.metadata or {}).get("kind") == OUTCOME_KIND]


def test_an_expiry_is_posted_to_its_thread_exactly_once(store_factory: Any) -> None:
    w = _world(store_factory, proposal_ttl_s=60)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    w.app.agents.payer.run(input="charge 8000", thread_key="t2", owner="u7")
    first, second = _only_proposal(w, "t1"), _only_proposal(w, "t2")
    w.clock.advance(60_000)
    # A tick that posted t1's expiry and died before recording it: the message is there, unmarked.
    assert sorted(proposal_store(w.app.store).expire_action_proposals()) == sorted([first.id, second.id])
    report_outcome(w.app.deps, w.app.proposals.get("t1", first.id, actor="u7"), "expired")
    assert len(_outcomes(w, "t1")) == 1
    report = w.app.work_proposals()
    assert sorted(report.announced) == sorted([first.id, second.id])
    assert w.app.work_proposals().announced == []
    for thread, proposal in (("t1", first), ("t2", second)):
        assert _outcomes(w, thread) == [
            f"Action proposal {proposal.id} ('charge_card') expired before anyone decided on it; the action "
            "did not run."]
    assert w.ledger.attempts == []


def test_an_expiry_found_by_a_late_decision_is_posted_by_the_next_tick(store_factory: Any) -> None:
    w = _world(store_factory, proposal_ttl_s=60)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    w.clock.advance(61_000)
    with pytest.raises(ProposalExpiredError):
        w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7")
    assert _outcomes(w, "t1") == []
    assert w.app.work_proposals().announced == [proposal.id]
    assert len(_outcomes(w, "t1")) == 1 and w.ledger.attempts == []


def test_an_outcome_wakes_an_agent_that_asks_for_it_once(store_factory: Any) -> None:
    w = _world(store_factory, wake_on_proposal_outcome=True, proposal_ttl_s=60)
    first = w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7", tenant=None)
    proposal = _only_proposal(w, "t1")
    assert w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7") == "applied"
    woken = w.app.store.get_run(wake_run_id(proposal.id))
    assert woken is not None and woken.status == "completed" and woken.owner == "u7"
    assert woken.result["text"] == f"answer to {_outcomes(w, 't1')[0]}"  # the outcome is the wake's input
    # Reporting the outcome again (a recovered worker) neither posts nor starts anything more.
    again = w.app.proposals.get("t1", proposal.id, actor="u7")
    assert report_outcome(w.app.deps, again, "succeeded", result=again.result) == woken.id
    assert len(_outcomes(w, "t1")) == 1
    assert {r.id for r in w.app.store.list_runs()} == {first.id, woken.id}

    w.app.agents.payer.run(input="charge 7000", thread_key="t2", owner="u7")
    rejected = _only_proposal(w, "t2")
    w.app.proposals.decide("t2", rejected.id, approve=False, actor="u7", reason="no")
    assert w.app.store.get_run(wake_run_id(rejected.id)) is not None

    w.app.agents.payer.run(input="charge 6000", thread_key="t3", owner="u7")
    lapsed = _only_proposal(w, "t3")
    w.clock.advance(60_000)
    assert w.app.work_proposals().announced == [lapsed.id]
    assert w.app.work_proposals().announced == []
    woken_by_expiry = w.app.store.get_run(wake_run_id(lapsed.id))
    assert woken_by_expiry is not None and "expired before anyone decided" in woken_by_expiry.result["text"]
    assert len(w.app.store.list_runs()) == 6 and w.ledger.attempts == [proposal.idempotency_key]


def test_without_the_option_no_run_is_woken_and_the_option_needs_independent_mode(store_factory: Any) -> None:
    w = _world(store_factory)
    w.app.agents.payer.run(input="charge 9000", thread_key="t1", owner="u7")
    proposal = _only_proposal(w, "t1")
    w.app.proposals.decide("t1", proposal.id, approve=True, actor="u7")
    assert w.app.store.get_run(wake_run_id(proposal.id)) is None and len(w.app.store.list_runs()) == 1
    with pytest.raises(InvalidAgentOptionError, match="wake_on_proposal_outcome"):
        define_agent(name="x", model="offline", wake_on_proposal_outcome=True)
