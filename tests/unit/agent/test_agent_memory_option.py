"""``define_agent(memory=...)`` is checked at declaration: every bad key or value is a named error."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs import define_agent, define_skill
from lunora_jobs.errors import DuplicateToolError, InvalidAgentOptionError
from lunora_jobs.memory import SemanticMemory, project, search
from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.search import SearchResult, normalize


@pytest.mark.parametrize(
    ("memory", "named"),
    [
        ("rag:docs", "must be a dict"),
        ({"top_k": 3}, "needs a source"),
        ({"source": 42}, "not searchable"),
        ({"source": "rag:docs", "topK": 3}, "did you mean 'top_k'"),
        ({"source": "rag:docs", "mode": "eager"}, "mode='eager'"),
        ({"source": "rag:docs", "top_k": 0}, "top_k must be an int"),
        ({"source": "rag:docs", "snippet_chars": True}, "snippet_chars must be an int"),
        ({"source": "rag:docs", "read": "rag:get"}, "mode='agentic'"),
        ({"source": "rag:docs", "mode": "agentic", "read": 7}, "read must be"),
        ({"source": "rag:docs", "namespace": 7}, "namespace must be"),
        ({"source": "rag:docs", "filter": ["x"]}, "filter must be a mapping"),
        ({"source": "rag:docs", "kind": "vector"}, "kind='vector'"),
        ({"kind": "episodic", "source": "rag:docs"}, "unknown key 'source'"),
        ({"kind": "episodic", "episodic": 5}, "episodic must be a dict"),
        ({"kind": "episodic", "episodic": {"recal": 5}}, "did you mean 'recall'"),
        ({"kind": "episodic", "episodic": {"recall": 21}}, "recall must be an int in 1..20"),
        ({"kind": "episodic", "episodic": {"max_episodes": 0}}, "max_episodes must be"),
        ({"kind": "episodic", "episodic": {"ttl_s": -1}}, "ttl_s must be a positive number"),
        ({"kind": "graph", "graph": {"depth": 0}}, "graph depth must be an int in 1..6"),
        ({"kind": "graph", "graph": {"maxSeeds": 3}}, "did you mean 'max_seeds'"),
        ({"kind": "graph", "graph": {"fan_out": 1.5}}, "fan_out must be an int"),
        ({"kind": "graph", "episodic": {}}, "unknown key 'episodic'"),
    ],
)
def test_a_bad_memory_option_names_the_problem(memory: Any, named: str) -> None:
    with pytest.raises(InvalidAgentOptionError, match=named) as raised:
        define_agent(name="a", model="offline", memory=memory)
    assert str(raised.value).startswith("Agent 'a': ")


def test_inject_declares_a_read_step_and_agentic_declares_tools() -> None:
    inject = define_agent(name="a", model="offline", memory={"source": "rag:docs"})
    assert isinstance(inject.memory, SemanticMemory) and inject.memory_reads == ("memory:retrieve",)
    assert inject.tools == {}
    agentic = define_agent(name="a", model="offline", memory={"source": "rag:docs", "mode": "agentic"})
    assert agentic.memory_reads == () and list(agentic.tools) == ["search_memory"]
    schema = agentic.tools["search_memory"].input_schema
    assert schema["required"] == ["query"] and schema["properties"]["top_k"]["maximum"] == 20


def test_a_minted_memory_tool_may_not_clash_with_an_agent_tool() -> None:
    from lunora_jobs import tool

    @tool
    def search_memory(query: str) -> str:
        """Mine."""
        return query

    with pytest.raises(DuplicateToolError, match="search_memory"):
        define_agent(name="a", model="offline", tools=[search_memory],
                     memory={"source": "rag:docs", "mode": "agentic"})


def test_episodic_declares_a_recall_before_and_an_episode_after_each_run() -> None:
    agent = define_agent(name="a", model="offline", memory={"kind": "episodic", "episodic": {"recall": 3}})
    assert agent.memory_reads == ("memory:recall",) and agent.memory_writes == ("memory:episode",)
    assert agent.tools == {}


def test_graph_declares_a_traverse_before_and_an_extract_after_each_run() -> None:
    agent = define_agent(name="a", model="offline", memory={"kind": "graph", "graph": {"depth": 3}})
    assert agent.memory_reads == ("memory:traverse",) and agent.memory_writes == ("memory:extract",)
    assert (agent.memory.depth, agent.memory.max_seeds, agent.memory.fan_out, agent.memory.max_nodes) == (
        3, 4, 8, 32)


def test_a_skill_knowledge_is_semantic_only() -> None:
    with pytest.raises(InvalidAgentOptionError, match="a skill's memory is its knowledge"):
        define_skill("billing", memory={"kind": "episodic"})


def test_a_skill_knowledge_error_names_the_skill() -> None:
    with pytest.raises(InvalidAgentOptionError, match="Skill 'billing': memory needs a source"):
        define_skill("billing", memory={"top_k": 2})


def test_normalize_accepts_the_shapes_sources_return() -> None:
    hits = [{"id": "a#0", "text": "one", "score": 0.5}, {"id": "b#1", "source_id": "b", "text": "two"}]
    result = normalize(hits, top_k=5)
    assert [(h.source_id, h.score) for h in result.hits] == [("a", 0.5), ("b", 0.0)]
    assert result.context == "[a] one\n\n[b] two" and result.sources == ["a", "b"]
    assert normalize({"hits": hits, "context": "given"}, top_k=1).context == "given"
    assert normalize("just text", top_k=3) == SearchResult(context="just text")
    with pytest.raises(TypeError, match="RetrievalResult"):
        normalize(42, top_k=3)


def test_the_projection_cuts_snippets_and_keeps_no_context() -> None:
    memory = SemanticMemory(source=lambda q: [{"id": "d#0", "text": "word " * 100, "score": 0.123456}])
    found = search(memory, "q", MemoryIdentity("o", "r", "t", "a"), lambda path, args: None)
    projected = project(found, 40)
    assert projected["sources"] == ["d"] and "context" not in projected
    (hit,) = projected["hits"]
    assert len(hit["snippet"]) <= 40 and hit["snippet"].endswith("…") and hit["score"] == 0.1235
