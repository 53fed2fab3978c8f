"""The default chunker: structure-aware (ATX and underlined headings), word-safe, heading trails; and
define_rag's contextual chunk headers (the document title on every chunk)."""

from __future__ import annotations

import random

from rag import MemoryStore, default_chunker, define_rag, markdown_chunker
from rag.embeddings.hashing import HashingEmbedder

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def test_no_word_is_ever_cut() -> None:
    rng = random.Random(7)
    for size in (40, 97, 250, 1000):
        words = [rng.choice(WORDS) * rng.randint(1, 3) for _ in range(2000)]
        # No sentence ends and no blank lines: the chunker must fall back to whitespace breaks.
        text = " ".join(words)
        for chunk in markdown_chunker(size, 0)(text):
            assert len(chunk) <= size
            assert set(chunk.split()) <= set(words), "a chunk holds a fragment of a word"


def test_underlined_headings_make_the_trail() -> None:
    doc = (
        "Compute a thing.\n\nParameters\n----------\nx : int\n    The value.\n\n"
        "Returns\n-------\nint\n    The result.\n\nGuide\n=====\n\nSetup\n-----\n\nInstall it."
    )
    chunks = markdown_chunker(60, 0)(doc)
    assert "## Parameters\n\nx : int" in chunks[1]
    assert chunks[2].startswith("## Returns")
    assert chunks[-1] == "# Guide > ## Setup\n\nInstall it."
    # "---" after a blank line is a thematic break, not a heading; a code fence stays whole.
    assert markdown_chunker(200, 0)("Intro\n\n---\n\nText") == ["Intro\n\n---\n\nText"]
    fenced = "```\nTitle\n-----\n```"
    assert markdown_chunker(200, 0)(fenced) == [fenced]


def test_default_chunker_is_the_structured_one() -> None:
    text = "# Guide\n\nIntro.\n\n## Auth\n\nUse OAuth."
    assert default_chunker()(text) == markdown_chunker(1000, 0)(text)


def test_title_heads_every_chunk_unless_disabled() -> None:
    text = " ".join(["Sentence about retries and backoff."] * 120)
    on = define_rag(
        embedding=HashingEmbedder(32),
        store=MemoryStore(),
        chunk=markdown_chunker(300, 0),
        allow_shared_namespace=True,
    )
    on.index("doc", text, metadata={"title": "Retry guide"})
    chunks = on.retrieve("retries", top_k=50, mode="lexical").chunks
    assert len(chunks) > 3 and all(c.text.startswith("Retry guide\n\n") for c in chunks)
    assert on.retrieve("guide", top_k=50, mode="lexical").chunks  # the title is matched lexically too
    off = define_rag(
        embedding=HashingEmbedder(32),
        store=MemoryStore(),
        chunk=markdown_chunker(300, 0),
        allow_shared_namespace=True,
        chunk_headers=False,
    )
    off.index("doc", text, metadata={"title": "Retry guide"})
    assert not any("Retry guide" in c.text for c in off.retrieve("retries", top_k=50).chunks)
    same = define_rag(embedding=HashingEmbedder(32), store=MemoryStore(), allow_shared_namespace=True)
    same.index("md", "# Retry guide\n\nBody text.", metadata={"title": "Retry guide"})
    assert same.retrieve("body", mode="lexical").chunks[0].text == "# Retry guide\n\nBody text."
