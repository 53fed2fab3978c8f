"""Graph memory on real stores: extraction upserts normalized entities and edges once per owner,
traversal is a bounded, deterministic BFS from the entities the input names, storage is capped."""

from __future__ import annotations

import json
from typing import Any

from memory_models import EXTRACTION_INSTRUCTIONS, KeyedModel

from lunora_jobs import define_agent
from lunora_jobs.memory import tiers
from lunora_jobs.memory.graph import Entity, Relation, normalize, parse
from lunora_jobs.memory.options import GraphMemory
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.store import AgentStore
from lunora_jobs.testing import FakeClock, Harness, agent_harness

WORK = {
    "entities": [{"name": "  Alice ", "type": "person"}, {"name": "ACME   Corp", "type": "org"}],
    "relations": [{"src": "Alice", "relation": "works at", "dst": "Acme Corp"},
                  {"src": "Bob", "relation": "works_at", "dst": "acme corp"},
                  {"src": "Acme Corp", "relation": "located_in", "dst": "Lisbon"}],
}


def _agent(**graph: Any) -> Any:
    return define_agent(name="grapher", model="offline", instructions="Be brief.",
                        memory={"kind": "graph", "graph": graph})


def _turn_prompts(harness: Harness) -> list[str]:
    return [str(p[0]["content"]) for p in harness.model.calls if p[-1]["content"] != EXTRACTION_INSTRUCTIONS]


def test_facts_extracted_in_one_thread_are_traversed_in_the_next(store: AgentStore, clock: FakeClock) -> None:
    model = KeyedModel({"I work at ACME Corp with Bob.": "Noted.", "Where is acme corp?": "In Lisbon."},
                       extractions={"I work at ACME Corp with Bob.": WORK,
                                    "Where is acme corp?": {"entities": [], "relations": []}})
    harness = agent_harness(_agent(), model=model, store=store)
    first = harness.run(input="I work at ACME Corp with Bob.", thread_key="a", owner="alice")
    assert [t.step for t in harness.dispatched] == ["memory:traverse", "llm:turn:0", "memory:extract"]
    extract = harness.store.get_step(first.run_id, "memory:extract")
    assert extract is not None and extract.result == {
        "entities": ["alice", "acme corp", "bob", "lisbon"],
        "relations": [["alice", "works_at", "acme corp"], ["bob", "works_at", "acme corp"],
                      ["acme corp", "located_in", "lisbon"]]}
    clock.advance(1_000)
    harness.run(input="Where is acme corp?", thread_key="b", owner="alice")
    assert _turn_prompts(harness)[1] == (
        "Be brief.\n\nWhat you know about this user (from earlier conversations):\n"
        "- acme corp —[located_in]→ lisbon\n- alice —[works_at]→ acme corp\n- bob —[works_at]→ acme corp")
    assert rows_for(store).count_graph("alice") == (4, 3)
    # Another owner shares nothing; an anonymous run neither traverses nor extracts.
    model.answers["Where is acme corp? (bob)"] = "No idea."
    bob = harness.run(input="Where is acme corp? (bob)", thread_key="c", owner="bob")
    assert _turn_prompts(harness)[2] == "Be brief."
    assert rows_for(store).count_graph("bob") == (0, 0)
    assert harness.store.get_step(bob.run_id, "memory:extract").result["skipped"].startswith("KeyError")
    anonymous = harness.run(input="Where is acme corp?", thread_key="d")
    traverse = harness.store.get_step(anonymous.run_id, "memory:traverse")
    assert traverse is not None and traverse.result["skipped"].startswith("anonymous")
    assert harness.store.get_step(anonymous.run_id, "memory:extract") is None


def test_a_repeated_extraction_sets_the_same_rows(store: AgentStore, clock: FakeClock) -> None:
    model = KeyedModel({"hi": "hello"}, extractions={"hi": WORK})
    harness = agent_harness(_agent(), model=model, store=store)
    harness.run(input="hi", thread_key="t", owner="alice")
    rows = rows_for(store)
    entities, relations = parse(json.dumps(WORK))
    for _ in range(3):  # a retried write, a replay: absolute values, never a second copy
        rows.upsert_graph("alice", entities, relations, now=clock(), max_entities=500, max_edges=2000,
                          ttl_ms=None)
    assert rows.count_graph("alice") == (4, 3)
    assert normalize("  ACME \t Corp ") == "acme corp"


def _star(store: AgentStore, clock: FakeClock, owner: str) -> None:
    """hub -> leaf00..leaf19, leaf00 -> deep1 -> deep2 -> deep3."""
    rels = [Relation("hub", "links", f"leaf{n:02d}") for n in range(20)]
    rels += [Relation("leaf00", "next", "deep1"), Relation("deep1", "next", "deep2"),
             Relation("deep2", "next", "deep3")]
    keys = {k for r in rels for k in (r.src, r.dst)}
    rows_for(store).upsert_graph(owner, [Entity(k, k) for k in sorted(keys)], rels, now=clock(),
                                 max_entities=500, max_edges=2000, ttl_ms=None)


def test_traversal_is_bounded_by_depth_fan_out_seeds_and_nodes(store: AgentStore, clock: FakeClock) -> None:
    _star(store, clock, "olga")
    rows = rows_for(store)

    def lines(text: str, **bounds: Any) -> list[str]:
        context = tiers.read(rows, GraphMemory(**bounds), "olga", text, clock())["context"]
        return context.splitlines() if context else []

    default = lines("tell me about the hub")  # depth 2, fan_out 8, max_nodes 32
    assert len(default) == 9  # 8 of hub's 20 edges, then leaf00's next edge (depth 2)
    assert default[0] == "- hub —[links]→ leaf00" and default[-1] == "- leaf00 —[next]→ deep1"
    assert default == lines("tell me about the hub")  # deterministic
    assert len(lines("the hub", depth=1)) == 8
    assert len(lines("the hub", fan_out=2)) == 3
    assert len(lines("the hub", depth=4, fan_out=30)) == 23
    assert len(lines("the hub", depth=4, fan_out=30, max_nodes=5)) == 4  # hub + 4 neighbours
    assert lines("deep3 and deep1 and hub", depth=1, max_seeds=1) == ["- deep2 —[next]→ deep3"]
    assert lines("nothing known here") == []
    assert lines("hubcap") == []  # seeds match whole words only


def test_the_caps_prune_the_oldest_and_lightest_and_their_edges(store: AgentStore, clock: FakeClock) -> None:
    rows = rows_for(store)
    for n in range(5):
        rows.upsert_graph("pia", [Entity(f"e{n}", f"e{n}"), Entity("home", "home")],
                          [Relation(f"e{n}", "near", "home")], now=clock(), max_entities=4, max_edges=3,
                          ttl_ms=None)
        clock.advance(1_000)
    assert rows.count_graph("pia") == (4, 3)
    context = tiers.read(rows, GraphMemory(), "pia", "home", clock())["context"]
    assert context == "- e2 —[near]→ home\n- e3 —[near]→ home\n- e4 —[near]→ home"
    clock.advance(3_600_000)
    rows.upsert_graph("pia", [Entity("fresh", "fresh")], [], now=clock(), max_entities=4, max_edges=3,
                      ttl_ms=60_000)
    assert rows.count_graph("pia") == (1, 0)  # the TTL dropped every row older than a minute


def test_an_extraction_that_is_not_json_never_fails_the_answered_run(store: AgentStore) -> None:
    model = KeyedModel({"hi": "hello"}, extractions={"hi": "not json at all"})
    harness = agent_harness(_agent(), model=model, store=store)
    result = harness.run(input="hi", thread_key="t", owner="quinn")
    assert result.status == "completed"
    row = harness.store.get_step(result.run_id, "memory:extract")
    assert row is not None and "JSONDecodeError" in row.result["skipped"]
    assert rows_for(store).count_graph("quinn") == (0, 0)
