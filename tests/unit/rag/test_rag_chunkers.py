"""Chunkers: sizes never exceeded, overlap, sentence packing, Markdown sections and fences, tokens."""

from __future__ import annotations

import random

import pytest

from rag.chunkers import fixed_chunker, markdown_chunker, sentence_chunker, token_chunker
from rag.errors import RagConfigurationError

PROSE = " ".join(
    f"Sentence number {i} talks about topic {i % 7} with some extra words to pad it out." for i in range(60)
)


def words(text: str) -> int:
    return len(text.split())


def test_fixed_window_default_is_1000_with_200_overlap() -> None:
    text = "".join(chr(97 + i % 26) for i in range(2700))
    chunks = fixed_chunker()(text)
    assert [len(c) for c in chunks] == [1000, 1000, 1000, 300]
    assert chunks[0][800:] == chunks[1][:200]
    assert chunks[-1] == text[2400:]


def test_fixed_window_validates_overlap() -> None:
    with pytest.raises(RagConfigurationError):
        fixed_chunker(100, 100)
    with pytest.raises(RagConfigurationError):
        sentence_chunker(0, 0)
    assert fixed_chunker()("   ") == []


def test_sentence_chunker_keeps_sentences_whole_and_overlaps() -> None:
    chunks = sentence_chunker(size=300, overlap=100)(PROSE)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk) <= 300
        assert chunk.startswith("Sentence number") and chunk.endswith(".")
    # The last sentence of one chunk opens the next (overlap carried over).
    last = chunks[0].rsplit(". ", 1)[-1]
    assert chunks[1].startswith(last.rstrip("."))


def test_sentence_chunker_hard_splits_an_oversized_sentence() -> None:
    giant = "word " * 400 + "end."
    chunks = sentence_chunker(size=120, overlap=20)("Short one. " + giant + " Tail sentence.")
    assert all(len(c) <= 120 for c in chunks)
    assert chunks[0].startswith("Short one.")
    assert "".join(chunks).replace(" ", "").count("word") == 400


def test_never_exceeds_size_on_random_text() -> None:
    rng = random.Random(7)
    vocab = ["alpha", "beta.", "gamma!", "delta?", "x" * 90, "\n\n", "# Head", "```", "epsilon"]
    for _ in range(30):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 400)))
        size = rng.randint(40, 400)
        overlap = rng.randint(0, size - 1)
        for chunker in (
            fixed_chunker(size, overlap),
            sentence_chunker(size, overlap),
            markdown_chunker(size, overlap),
        ):
            assert all(len(c) <= size for c in chunker(text)), (size, overlap)


MARKDOWN = """Intro paragraph before any heading.

# Guide

Welcome to the guide.

## Auth

Use OAuth for everything.

```python
# this is a comment, not a heading
print("hi")

# neither is this
```

### OAuth

Tokens expire after one hour.

## Billing

Invoices go out monthly.
"""


def test_markdown_sections_heading_trails_and_fences() -> None:
    chunks = markdown_chunker(size=500, overlap=0)(MARKDOWN)
    assert chunks[0] == "Intro paragraph before any heading."
    assert chunks[1] == "# Guide\n\nWelcome to the guide."
    auth = chunks[2]
    assert auth.startswith("# Guide > ## Auth\n\nUse OAuth for everything.")
    assert "# this is a comment, not a heading" in auth and "# neither is this" in auth
    assert "```python" in auth and auth.rstrip().endswith("```")
    assert chunks[3] == "# Guide > ## Auth > ### OAuth\n\nTokens expire after one hour."
    assert chunks[4] == "# Guide > ## Billing\n\nInvoices go out monthly."
    assert len(chunks) == 5


def test_markdown_long_section_is_packed_with_its_trail_on_every_chunk() -> None:
    text = "# Manual\n\n## Install\n\n" + PROSE
    chunks = markdown_chunker(size=250, overlap=50)(text)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.startswith("# Manual > ## Install\n\n")
        assert len(chunk) <= 250


def test_markdown_oversized_trail_and_block_still_fit() -> None:
    text = "# " + "T" * 300 + "\n\n" + "y" * 1000
    chunks = markdown_chunker(size=200, overlap=20)(text)
    assert chunks and all(len(c) <= 200 for c in chunks)


def test_token_chunker_uses_the_injected_counter() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return words(text)

    chunks = token_chunker(count_tokens=count, max_tokens=40, overlap_tokens=20)(PROSE)
    assert calls, "the injected counter must be used"
    assert len(chunks) > 5
    assert all(words(c) <= 40 for c in chunks)
    # overlap: the next chunk begins with the previous chunk's last sentence
    assert chunks[1].split(" ")[0:3] == chunks[0].rsplit(". ", 1)[-1].split(" ")[0:3]


def test_token_chunker_hard_splits_long_words_and_sentences() -> None:
    def count(text: str) -> int:  # one token per 4 characters, like a BPE on gibberish
        return -(-len(text) // 4)

    text = "z" * 100 + " " + "short words here. " * 3
    chunks = token_chunker(count_tokens=count, max_tokens=8, overlap_tokens=0)(text)
    assert all(count(c) <= 8 for c in chunks)
    assert "".join(chunks).count("z") == 100


def test_token_chunker_requires_a_counter() -> None:
    with pytest.raises(RagConfigurationError, match="count_tokens"):
        token_chunker(count_tokens=None)  # type: ignore[arg-type]


def test_markdown_joins_sentences_of_one_paragraph_with_a_space() -> None:
    # A paragraph too long for one chunk is packed sentence by sentence: its sentences stay on one
    # line; only paragraphs/blocks are separated by a blank line.
    text = (
        "# Manual\n\n## Install\n\n"
        "First sentence here. Second one follows. Third is longer than the others by far. "
        "Fourth goes on and on for a while.\n\n"
        "Another paragraph. With two sentences.\n\n"
        "- item one.\n- item two."
    )
    chunks = markdown_chunker(size=120, overlap=0)(text)
    trail = "# Manual > ## Install\n\n"
    assert chunks == [
        trail + "First sentence here. Second one follows. Third is longer than the others by far.",
        trail + "Fourth goes on and on for a while.\n\nAnother paragraph. With two sentences.",
        trail + "- item one.\n- item two.",
    ]
    overlapped = markdown_chunker(size=120, overlap=40)(text)
    assert overlapped[1] == (
        "# Manual > ## Install\n\nThird is longer than the others by far. Fourth goes on and on for a while."
    )
    for chunk in [*chunks, *overlapped]:
        body = chunk.split("\n\n", 1)[1]
        assert ".\n\nF" not in body and ".\n\nS" not in body and ".\n\nT" not in body


def test_markdown_long_list_keeps_its_line_breaks_when_split() -> None:
    items = "\n".join(f"- step {i} does one thing." for i in range(12))
    chunks = markdown_chunker(size=120, overlap=0)("# Steps\n\n" + items)
    assert len(chunks) > 1
    for chunk in chunks:
        body = chunk.removeprefix("# Steps\n\n")
        assert body.startswith("- step") and "\n\n" not in body and ". -" not in body
