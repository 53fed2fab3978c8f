"""Inject mode retrieves what ``rag`` retrieves: on the repository's RAG test corpus (offline MiniLM),
the context injected into the first turn's prompt holds the answering document for the test queries
at the same rate as the rag queried directly with the same ``top_k``.

Run ``pytest tests/integration/memory/test_memory_retrieval_quality.py -s`` to see the rates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lunora_jobs import define_agent
from lunora_jobs.testing import agent_harness, final_turn
from rag import bm25_lexical_store, define_rag, markdown_chunker
from rag.stores.memory import MemoryStore

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[2] / "data" / "rag_corpus"
TOP_K = 5


def test_inject_context_holds_the_answer_as_often_as_rag_alone() -> None:
    minilm = pytest.importorskip("rag.embeddings.minilm")
    docs = {p.stem: p.read_text(encoding="utf-8") for p in sorted((CORPUS / "docs").glob("*.md"))}
    queries = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))["queries"]
    rag = define_rag(embedding=minilm.MiniLMEmbedder(), store=MemoryStore(), index="quality",
                     chunk=markdown_chunker(size=150, overlap=0), lexical_store=bm25_lexical_store(),
                     allow_shared_namespace=True)
    for doc_id, text in docs.items():
        rag.index(doc_id, text, metadata={"title": text.splitlines()[0].lstrip("# ")})
    agent = define_agent(name="reader", model="offline", memory={"source": rag, "top_k": TOP_K})
    harness = agent_harness(agent, script=[final_turn("ok")])

    alone = injected = 0
    for n, query in enumerate(queries):
        answers = {doc for doc, grade in query["relevance"].items() if grade == 3}
        direct = rag.retrieve(query["query"], top_k=TOP_K)
        alone += bool(answers & {s.id for s in direct.sources})
        result = harness.run(input=query["query"], thread_key=f"q{n}", owner="reader")
        memo = harness.store.get_step(result.run_id, "memory:retrieve")
        assert memo is not None
        prompt = str(harness.model.calls[-1][0]["content"])
        assert memo.result["context"] in prompt  # what was retrieved is what the model read
        injected += bool(answers & set(memo.result["sources"]))
    print(f"\nanswering document within top {TOP_K}: rag alone {alone}/{len(queries)}, "
          f"inject mode {injected}/{len(queries)}")
    assert injected == alone
    assert alone >= 0.8 * len(queries)  # the corpus's documented quality; a broken setup scores far lower
