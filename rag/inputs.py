"""Argument checks at the public surface: a wrong type or value is a named error saying what to pass.

Every check runs before anything reaches a tokenizer, an embedder or a store, so a bad call never
ends in a traceback from deep inside one of them (``AttributeError`` in a chunker, a tokenizer's
``TypeError``, an ``OverflowError`` in the engine).

Example::

    check_text(b"bytes")               # RagInputError: decode it first
    check_count("top_k", 2**64, 100)   # TopKTooLargeError
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag.errors import RagInputError, TopKTooLargeError
from rag.text import normalize_text

MAX_TOP_K = 10_000
"""The largest ``top_k`` / ``candidates`` any store is asked for (a store may declare less)."""
MAX_SOURCE_ID_CHARS = 200  # chunk ids are "<id>#<n>" and SQL stores key them in 255 characters


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def check_text(text: object, what: str = "text") -> str:
    """A document body as normalised text (``rag.text.normalize_text``)."""
    if isinstance(text, bytes | bytearray):
        raise RagInputError(
            f"{what} must be a str, got bytes: decode it first, e.g. body.decode('utf-8', errors='replace')"
        )
    if not isinstance(text, str):
        raise RagInputError(f"{what} must be a str, got {_type_name(text)}")
    return normalize_text(text)


def check_query(query: object) -> str:
    """A non-blank query string, normalised."""
    text = check_text(query, "query")
    if not text.strip():
        raise RagInputError("query is empty: pass the question or keywords to search for")
    return text


def check_source_id(source_id: object) -> str:
    """A source id: a non-empty str of at most 200 printable characters."""
    if not isinstance(source_id, str):
        raise RagInputError(f"id must be a str (e.g. a file path or a row key), got {_type_name(source_id)}")
    if not source_id or len(source_id) > MAX_SOURCE_ID_CHARS or not source_id.isprintable():
        raise RagInputError(
            f"id must be 1..{MAX_SOURCE_ID_CHARS} printable characters, got {source_id[:40]!r}"
        )
    if normalize_text(source_id) != source_id:
        raise RagInputError(f"id {source_id[:40]!r} holds a lone surrogate or is not in Unicode NFC")
    return source_id


def check_mapping(value: object, what: str, example: str) -> dict[str, Any] | None:
    """``None`` or a mapping with str keys, as a dict."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise RagInputError(f"{what} must be a mapping such as {example}, got {_type_name(value)}")
    if not all(isinstance(key, str) for key in value):
        raise RagInputError(f"{what} keys must be strings, e.g. {example}")
    return dict(value)


def check_count(what: str, value: object, ceiling: int | None) -> int:
    """A positive int within ``ceiling`` (``MAX_TOP_K`` when the store declares none)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RagInputError(f"{what} must be an int >= 1, got {_type_name(value)}")
    if value < 1:
        raise RagInputError(f"{what} must be >= 1, got {value}")
    limit = MAX_TOP_K if ceiling is None else min(ceiling, MAX_TOP_K)
    if value > limit:
        raise TopKTooLargeError(f"{what}={value} exceeds this store's maximum of {limit}; ask for fewer")
    return value
