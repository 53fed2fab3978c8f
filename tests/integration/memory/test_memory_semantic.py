"""Semantic memory on real stores: the inject read is one memoized step, agentic memory is tools,
and every search runs as the run's owner (the rag's ``rls_filter``), failing closed without one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lunora_jobs import define_agent, define_skill
from lunora_jobs.memory import MemoryQuery
from lunora_jobs.store import AgentStore
from lunora_jobs.testing import FakeClock, agent_harness, final_turn, tool_call_turn
from rag import Rag


class CountingSource:
    """A callable source delegating to a rag bound as the query's owner, counting every search."""

    def __init__(self, rag: Rag) -> None:
        self.rag = rag
        self.queries: list[tuple[str | None, str]] = []

    def __call__(self, request: MemoryQuery) -> Any:
        self.queries.append((request.identity.owner, request.query))
        return self.rag.bind(auth=request.identity.auth()).retrieve(request.query, top_k=request.top_k)


def _system(prompt: list[dict[str, Any]]) -> str:
    return str(prompt[0]["content"]) if prompt and prompt[0]["role"] == "system" else ""


def test_inject_searches_once_at_run_start_and_every_turn_carries_the_context(
    store: AgentStore, docs: Rag
) -> None:
    source = CountingSource(docs)
    agent = define_agent(name="helper", model="offline", instructions="Be brief.",
                         memory={"source": source, "top_k": 1})
    harness = agent_harness(agent, script=[
        tool_call_turn("c1", "missing_tool", {}), final_turn("Your flight leaves on March 3."),
    ], store=store)
    result = harness.run(input="When does my conference flight leave?", thread_key="t1", owner="alice")
    assert result.stopped == "final"
    assert [t.step for t in harness.dispatched][:2] == ["memory:retrieve", "llm:turn:0"]
    assert source.queries == [("alice", "When does my conference flight leave?")]
    memo = harness.store.get_step(result.run_id, "memory:retrieve")
    assert memo is not None and [h["source_id"] for h in memo.result["hits"]] == ["alice-plan"]
    # Both turns carry the recorded context after the instructions; nothing of bob's is in it.
    assert len(harness.model.calls) == 2
    for prompt in harness.model.calls:
        system = _system(prompt)
        assert system.startswith("Be brief.\n\nRelevant context from memory:\n")
        assert "Lisbon conference flight leaves on March 3" in system and "Oslo" not in system
    # A redelivered read replays its memo and searches nothing.
    assert harness.app.execute_step(result.run_id, "memory:retrieve").status == "replayed"
    assert len(source.queries) == 1


def test_a_rag_source_is_bound_to_the_run_owner_and_owners_never_see_each_other(
    store: AgentStore, docs: Rag
) -> None:
    agent = define_agent(name="helper", model="offline", memory={"source": docs, "top_k": 4})
    harness = agent_harness(agent, script=[final_turn("ok"), final_turn("ok")], store=store)
    harness.run(input="travel plan conference", thread_key="a", owner="alice")
    harness.run(input="travel plan conference locker code", thread_key="b", owner="bob")
    alice, bob = (_system(p) for p in harness.model.calls)
    assert "Lisbon" in alice and "Miso" in alice and "Oslo" not in alice and "4471" not in alice
    assert "Oslo" in bob and "4471" in bob and "Lisbon" not in bob and "Miso" not in bob


def test_an_anonymous_run_against_an_rls_source_fails_closed_naming_the_cause(
    store: AgentStore, docs: Rag
) -> None:
    agent = define_agent(name="helper", model="offline", memory={"source": docs})
    harness = agent_harness(agent, script=[final_turn("never")], store=store)
    result = harness.run(input="what is bob's locker code?", thread_key="anon")
    assert result.status == "failed"
    assert "IdentityRequiredError" in (result.error or "")
    assert harness.model.calls == []  # the model never ran, so nothing could leak through it


def test_agentic_mode_mints_search_and_read_tools_with_a_compact_projection(
    store: AgentStore, docs: Rag
) -> None:
    full = {"alice-plan": "Alice's travel plan: the Lisbon conference flight leaves on March 3."}
    reads: list[tuple[str, str | None]] = []

    def read(doc_id: str, identity: Any) -> str:
        reads.append((doc_id, identity.owner))
        return full[doc_id]

    agent = define_agent(name="helper", model="offline", instructions="Use memory.",
                         memory={"source": docs, "mode": "agentic", "read": read, "snippet_chars": 30})
    assert [t.name for t in agent.tool_specs()] == ["search_memory", "read_memory"]
    harness = agent_harness(agent, script=[
        tool_call_turn("s1", "search_memory", {"query": "conference flight", "top_k": 2}),
        tool_call_turn("r1", "read_memory", {"id": "alice-plan"}),
        final_turn("March 3."),
    ], store=store)
    result = harness.run(input="When do I fly?", thread_key="t", owner="alice")
    assert result.stopped == "final"
    names = [s.name for s in harness.steps(result.run_id)]
    assert "memory:retrieve" not in names  # nothing injected
    assert all(_system(p) == "Use memory." for p in harness.model.calls)
    tool_messages = [m for m in harness.messages("t") if m.role == "tool"]
    found = json.loads(tool_messages[0].content)
    assert set(found) == {"hits", "sources"}  # never the joined context
    assert [h["source_id"] for h in found["hits"]] == ["alice-plan", "alice-pet"]
    assert found["sources"] == ["alice-plan", "alice-pet"]
    assert all(len(h["snippet"]) <= 30 and set(h) == {"id", "source_id", "score", "snippet"}
               for h in found["hits"])
    assert tool_messages[1].content == full["alice-plan"]
    assert reads == [("alice-plan", "alice")]
    # A replayed search step returns the recorded hits: the source is not asked again.
    docs.index("alice-new", "Alice's conference flight moved to March 4.", metadata={"owner": "alice"})
    replay = harness.app.execute_step(result.run_id, "tool:search_memory:s1")
    assert replay.status == "replayed" and "alice-new" not in json.dumps(replay.result)


def test_agentic_search_is_confined_to_the_owner(store: AgentStore, docs: Rag) -> None:
    agent = define_agent(name="helper", model="offline", memory={"source": docs, "mode": "agentic"})
    harness = agent_harness(agent, script=[
        tool_call_turn("s1", "search_memory", {"query": "locker code travel plan", "top_k": 10}),
        final_turn("no idea"),
    ], store=store)
    harness.run(input="bob's locker code?", thread_key="t", owner="alice")
    found = json.loads(next(m for m in harness.messages("t") if m.role == "tool").content)
    assert {h["source_id"] for h in found["hits"]} == {"alice-plan", "alice-pet"}


def test_a_skill_knowledge_is_its_own_step_injected_after_the_agent_memory(
    store: AgentStore, docs: Rag
) -> None:
    def billing_docs(request: MemoryQuery) -> list[dict[str, Any]]:
        return [{"id": "inv#0", "source_id": "invoices", "score": 0.9,
                 "text": "Invoices are due in 30 days."}]

    billing = define_skill("billing", "Cite invoice ids.", memory={"source": billing_docs, "top_k": 1})
    agent = define_agent(name="helper", model="offline", instructions="Be brief.",
                         memory={"source": docs, "top_k": 1}, skills=[billing])
    harness = agent_harness(agent, script=[final_turn("30 days")], store=store)
    harness.run(input="conference flight invoice", thread_key="t", owner="alice")
    steps = [t.step for t in harness.dispatched]
    assert steps == ["memory:retrieve", "memory:retrieve:billing", "llm:turn:0"]
    system = _system(harness.model.calls[0])
    assert system.index("Cite invoice ids.") < system.index("Relevant context from memory:") < system.index(
        "Relevant context from the 'billing' skill's knowledge:\n[invoices] Invoices are due in 30 days.")


def test_a_skill_in_agentic_mode_mints_tools_named_after_it() -> None:
    billing = define_skill("billing", memory={"source": "billing:search", "mode": "agentic",
                                              "read": "billing:get"})
    agent = define_agent(name="helper", model="offline", skills=[billing])
    assert [t.name for t in agent.tool_specs()] == ["search_billing", "read_billing"]
    harness = agent_harness(agent, script=[
        tool_call_turn("s1", "search_billing", {"query": "due date"}), final_turn("ok"),
    ], functions={"billing:search": lambda args: [{"id": "inv#0", "text": "Due in 30 days.", "score": 1}]})
    harness.run(input="when is it due?", thread_key="t", owner="alice")
    assert harness.dispatches == [{"path": "billing:search",
                                   "args": {"query": "due date", "top_k": 5, "owner": "alice"}}]
    found = json.loads(next(m for m in harness.messages("t") if m.role == "tool").content)
    hit = {"id": "inv#0", "source_id": "inv", "score": 1.0, "snippet": "Due in 30 days."}
    assert found == {"hits": [hit], "sources": ["inv"]}


def test_a_worker_killed_mid_read_is_taken_over_and_the_read_records_once(
    store: AgentStore, docs: Rag, clock: FakeClock
) -> None:
    class WorkerDied(BaseException):
        """Not an Exception: the engine records nothing, as with a SIGKILL."""

    calls: list[str] = []

    def dying(request: MemoryQuery) -> Any:
        calls.append(request.query)
        if len(calls) == 1:
            raise WorkerDied()
        return docs.bind(auth=request.identity.auth()).retrieve(request.query, top_k=1)

    agent = define_agent(name="helper", model="offline", memory={"source": dying}, step_timeout_s=1)
    harness = agent_harness(agent, script=[final_turn("March 3")], store=store)
    with pytest.raises(WorkerDied):
        harness.run(input="conference flight", thread_key="t", owner="alice")
    run = harness.store.list_runs()[0]
    row = harness.store.get_step(run.id, "memory:retrieve")
    assert row is not None and row.status == "running"
    clock.advance(40_000)  # past the lease (1 s + the 30 s margin) and the sweep's grace
    report = harness.app.sweep()
    assert [t.step for t in report.dispatched] == ["memory:retrieve"]
    assert harness.result(run.id).stopped == "final"
    row = harness.store.get_step(run.id, "memory:retrieve")
    assert row is not None and (row.status, row.attempt) == ("completed", 2)
    assert len(calls) == 2 and len(harness.model.calls) == 1
    assert "Lisbon" in _system(harness.model.calls[0])


def test_tenants_under_rls_never_see_each_other_inject_or_agentic(store: AgentStore) -> None:
    """A tenant-scoped index: the rls_filter derives the tenant from the verified owner."""
    from rag import HashingEmbedder, define_rag
    from rag.stores.memory import MemoryStore

    kb = define_rag(embedding=HashingEmbedder(), store=MemoryStore(), index="kb", allow_shared_namespace=True,
                    rls_filter=lambda auth: {"tenant": auth["owner"].split(":", 1)[0]})
    kb.index("acme-refunds", "Refund policy: refunds within 30 days.", metadata={"tenant": "acme"})
    kb.index("globex-refunds", "Refund policy: refunds within 90 days, store credit only.",
             metadata={"tenant": "globex"})
    inject = define_agent(name="inject", model="offline", memory={"source": kb, "top_k": 5})
    harness = agent_harness(inject, script=[final_turn("ok")], store=store)
    harness.run(input="refund policy", thread_key="a", owner="acme:alice")
    harness.run(input="refund policy", thread_key="g", owner="globex:gus")
    acme, globex = (_system(p) for p in harness.model.calls)
    assert "30 days" in acme and "90 days" not in acme
    assert "90 days" in globex and "30 days" not in globex
    agentic = define_agent(name="agentic", model="offline", memory={"source": kb, "mode": "agentic"})
    harness = agent_harness(agentic, script=[
        tool_call_turn("s1", "search_memory", {"query": "refund policy", "top_k": 5}), final_turn("ok"),
    ], store=store)
    harness.run(input="refunds?", thread_key="a2", owner="acme:alice")
    found = json.loads(next(m for m in harness.messages("a2") if m.role == "tool").content)
    assert found["sources"] == ["acme-refunds"]


def test_a_prepare_step_system_override_keeps_the_memory_context(store: AgentStore, docs: Rag) -> None:
    agent = define_agent(name="helper", model="offline", instructions="Be brief.",
                         memory={"source": docs, "top_k": 1},
                         prepare_step=lambda args: {"system": "Answer in French."})
    harness = agent_harness(agent, script=[final_turn("Le 3 mars.")], store=store)
    harness.run(input="When does my conference flight leave?", thread_key="t", owner="alice")
    system = _system(harness.model.calls[0])
    assert system.startswith("Answer in French.\n\nRelevant context from memory:\n") and "Lisbon" in system
