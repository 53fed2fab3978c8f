"""Chunkers: text in, a list of chunk texts out. None ever emits a chunk longer than its size.

- ``default_chunker()`` -- what ``define_rag`` uses: ``markdown_chunker(1000, 0)``, chosen by
  measurement (``bench/rag_quality.py``) over the fixed window it replaces.
- ``fixed_chunker(size=1000, overlap=200)`` -- a character window (cuts words; the previous default).
- ``sentence_chunker(size, overlap)`` -- packs whole sentences.
- ``markdown_chunker(size, overlap)`` -- structure-aware: splits at headings -- ATX (``#``, not inside
  code fences) and underlined (Setext, reStructuredText, numpydoc ``Parameters`` / ``-----``) --,
  packs each section's blocks (paragraphs, lists, fences), splits a block too big for a chunk into
  sentences and a sentence too big at whitespace (so no word is cut, unless one token is longer than
  a whole chunk), and prefixes every chunk with its heading trail ``# A > ## B``.
- ``token_chunker(count_tokens=..., max_tokens=..., overlap_tokens=...)`` -- bounds chunks by a real
  token count from an injected counter (no tokenizer is bundled, and chars/4 is not a token count).

An atom (sentence, block) too large for a chunk falls back to a hard split, so a store never receives
a chunk it would reject. Example::

    chunk = markdown_chunker(size=800, overlap=100)
    chunk("# Guide\\n\\n## Auth\\n\\nUse OAuth.")   # ["# Guide > ## Auth\\n\\nUse OAuth."]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag.errors import RagConfigurationError

Chunker = Callable[[str], list[str]]
Measure = Callable[[str], int]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A Setext / reStructuredText / numpydoc heading's underline: one punctuation character repeated.
_UNDERLINE = re.compile(r"^ {0,3}([=\-~^*+#\"'])\1{2,}[ \t]*$")
_UNDERLINE_LEVEL = {"=": 1, "-": 2}
_WHITESPACE = re.compile(r"\s")


def _check(size: int, overlap: int, what: str = "size") -> None:
    if size <= 0:
        raise RagConfigurationError(f"chunk {what} must be positive, got {size}")
    if overlap < 0 or overlap >= size:
        raise RagConfigurationError(
            f"chunk overlap must be in [0, {what}), got overlap={overlap} {what}={size}"
        )


def fixed_chunker(size: int = 1000, overlap: int = 200) -> Chunker:
    """A sliding character window of ``size`` advancing by ``size - overlap``."""
    _check(size, overlap)

    def chunk(text: str) -> list[str]:
        text = text.strip()
        if not text:
            return []
        step = size - overlap
        out = []
        for start in range(0, len(text), step):
            out.append(text[start : start + size])
            if start + size >= len(text):
                break
        return out

    return chunk


def default_chunker() -> Chunker:
    """The chunker ``define_rag`` uses when given none: ``markdown_chunker(1000, 0)``.

    Structure-aware, word-safe, heading trail on every chunk; with ``define_rag``'s contextual chunk
    headers (the document ``title`` on every chunk) no overlap is needed for context.
    """
    return markdown_chunker(1000, 0)


def sentence_chunker(size: int = 1000, overlap: int = 200) -> Chunker:
    """Whole sentences packed into windows of at most ``size`` characters, ``overlap`` carried over."""
    _check(size, overlap)
    return lambda text: pack(split_sentences(text), size, overlap, " ", len, _hard_split_chars)


def markdown_chunker(size: int = 1000, overlap: int = 200) -> Chunker:
    """Sections at headings (ATX, fence-aware, and underlined), each chunk prefixed with its heading
    trail; blocks packed whole, then sentences, then whitespace-separated words (see the module doc)."""
    _check(size, overlap)

    def chunk(text: str) -> list[str]:
        out: list[str] = []
        for trail, blocks in _markdown_sections(text):
            prefix = " > ".join(trail)
            if prefix and len(prefix) + 2 > size // 2:
                prefix = prefix[: size // 2 - 3] + "…"  # a trail must not eat the chunk
            budget = size - (len(prefix) + 2 if prefix else 0)
            atoms: list[tuple[str, str]] = []
            for block in blocks:
                # A block packs whole, after a blank line; a block too big for one chunk is cut into
                # sentences that keep the spacing they had (a space, or a line break in a list).
                parts = [("", block)] if len(block) <= budget else _sentences_with_breaks(block)
                atoms.extend(("\n\n" if n == 0 else sep, part) for n, (sep, part) in enumerate(parts))
            packed = _pack(atoms, budget, min(overlap, budget // 2), len, _hard_split_chars, " ")
            out.extend(f"{prefix}\n\n{body}" if prefix else body for body in packed)
        return out

    return chunk


def token_chunker(*, count_tokens: Measure, max_tokens: int = 512, overlap_tokens: int = 64) -> Chunker:
    """Sentences packed so each chunk has at most ``max_tokens`` by ``count_tokens``.

    ``count_tokens`` is required: pass tiktoken's ``lambda s: len(enc.encode(s))`` or your model's counter.
    """
    if not callable(count_tokens):
        raise RagConfigurationError(
            "token_chunker needs count_tokens=callable(text) -> int (e.g. from tiktoken)"
        )
    _check(max_tokens, overlap_tokens, "max_tokens")

    def hard(atom: str, limit: int) -> list[str]:
        return _hard_split_tokens(atom, limit, count_tokens)

    return lambda text: pack(split_sentences(text), max_tokens, overlap_tokens, " ", count_tokens, hard)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (paragraph breaks always end one), stripped, empties dropped."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        out.extend(s.strip() for s in _SENTENCE_END.split(paragraph.strip()) if s.strip())
    return out


def pack(
    atoms: Sequence[str],
    limit: int,
    overlap: int,
    sep: str,
    measure: Measure,
    hard_split: Callable[[str, int], list[str]],
) -> list[str]:
    """Greedily join ``atoms`` with ``sep`` into pieces of ``measure <= limit``; carry up to ``overlap``
    of trailing atoms into the next piece; hard-split any atom that alone exceeds ``limit``."""
    return _pack([(sep, atom) for atom in atoms], limit, overlap, measure, hard_split, sep)


def _join(items: Sequence[tuple[str, str]]) -> str:
    """``(separator before, text)`` items joined; the first item's separator is dropped."""
    return "".join(text if n == 0 else sep + text for n, (sep, text) in enumerate(items))


def _pack(
    atoms: Sequence[tuple[str, str]],
    limit: int,
    overlap: int,
    measure: Measure,
    hard_split: Callable[[str, int], list[str]],
    piece_sep: str,
) -> list[str]:
    """``pack`` over ``(separator before, atom)``: each atom says how it joins the one before it
    (hard-split pieces of one atom join with ``piece_sep``)."""
    chunks: list[str] = []
    current: list[tuple[str, str]] = []
    for lead, atom in atoms:
        pieces = hard_split(atom, limit) if measure(atom) > limit else [atom]
        for n, piece in enumerate(pieces):
            item = (lead if n == 0 else piece_sep, piece)
            if not current or measure(_join([*current, item])) <= limit:
                current.append(item)
                continue
            chunks.append(_join(current))
            tail: list[tuple[str, str]] = []
            for previous in reversed(current):
                if overlap <= 0 or measure(_join([previous, *tail])) > overlap:
                    break
                tail.insert(0, previous)
            while tail and measure(_join([*tail, item])) > limit:
                tail.pop(0)
            current = [*tail, item]
    if current:
        chunks.append(_join(current))
    return chunks


def _sentences_with_breaks(block: str) -> list[tuple[str, str]]:
    """``(separator before, sentence)`` of one block: the original break between two sentences
    becomes a space, a line break, or a blank line (inside a fence) -- never more than it was."""
    out: list[tuple[str, str]] = []
    start, sep = 0, ""
    for match in _SENTENCE_END.finditer(block):
        sentence = block[start : match.start()].strip()
        if sentence:
            out.append((sep, sentence))
            newlines = match.group().count("\n")
            sep = "\n\n" if newlines > 1 else "\n" if newlines == 1 else " "
        start = match.end()
    if block[start:].strip():
        out.append((sep, block[start:].strip()))
    return out


def _hard_split_chars(atom: str, limit: int) -> list[str]:
    # Cut at the last whitespace of the window, so no word is ever cut; only a single token longer
    # than the whole chunk (a URL, a base64 blob) has to be cut inside itself.
    out = []
    rest = atom
    while len(rest) > limit:
        breaks = [m.start() for m in _WHITESPACE.finditer(rest, 1, limit + 1)]
        cut = breaks[-1] if breaks else limit
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out.append(rest)
    return [piece for piece in out if piece]


def _hard_split_tokens(atom: str, limit: int, count: Measure) -> list[str]:
    words: list[str] = []
    for word in atom.split():
        words.extend([word] if count(word) <= limit else _split_word(word, limit, count))
    return pack(words, limit, 0, " ", count, lambda w, n: [w])


def _split_word(word: str, limit: int, count: Measure) -> list[str]:
    out = []
    while word:
        lo, hi = 1, len(word)  # longest prefix within the limit (at least one character)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if count(word[:mid]) <= limit else (lo, mid - 1)
        out.append(word[:lo])
        word = word[lo:]
    return out


def _markdown_sections(text: str) -> list[tuple[list[str], list[str]]]:
    """``(heading trail, blocks)`` per section; blank lines split blocks except inside fences."""
    sections: list[tuple[list[str], list[str]]] = []
    trail: list[tuple[int, str]] = []
    blocks: list[str] = []
    lines: list[str] = []
    fence: str | None = None

    def end_block() -> None:
        block = "\n".join(lines).strip("\n")
        if block.strip():
            blocks.append(block)
        lines.clear()

    def end_section() -> None:
        end_block()
        if blocks:
            sections.append(([f"{'#' * level} {title}" for level, title in trail], blocks.copy()))
        blocks.clear()

    for line in text.splitlines():
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            lines.append(line)
            continue
        heading = _HEADING.match(line) if fence is None else None
        underline = _UNDERLINE.match(line) if fence is None and heading is None else None
        if underline and len(lines) == 1 and lines[0].strip() and not _UNDERLINE.match(lines[0]):
            # "Title\n=====": the one-line block above becomes a heading, as in Setext and reST.
            title = lines.pop().strip()
            if len(line.strip()) * 2 >= len(title):
                end_section()
                level = _UNDERLINE_LEVEL.get(underline.group(1), 3)
                trail = [(lvl, t) for lvl, t in trail if lvl < level]
                trail.append((level, title))
                continue
            lines.append(title)
        if heading:
            end_section()
            level = len(heading.group(1))
            trail = [(lvl, title) for lvl, title in trail if lvl < level]
            trail.append((level, heading.group(2).strip()))
        elif fence is None and not line.strip():
            end_block()
        else:
            lines.append(line)
    end_section()
    return sections
