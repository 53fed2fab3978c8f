"""JSON on the step's hot path: orjson where it gives the standard library's result, else ``json``.

A step decodes the run's input, its ledger rows, the thread's messages and the claim's row (a dozen
documents or more) and encodes its memo, its messages, its broker message and its live notice.
``json``'s Python layer around its C scanner (the decoder object, the encoder's options) is most of
the cost of such small documents; orjson does the same work in one call.

- ``loads``: ``orjson.loads``; a document only ``json`` reads (``NaN`` or ``Infinity``, a lone
  surrogate escape) or may read differently (a run of 19 digits or more: orjson reads an integer
  outside 64 bits as a float) is read by ``json.loads``, so the result is always what ``json.loads``
  returns, and invalid JSON raises ``json.JSONDecodeError`` as before.
- ``dumps``: compact, non-ASCII kept (``json.dumps(..., separators=(",", ":"), ensure_ascii=False)``).
  A value orjson would encode differently from ``json`` (a subclass of ``str``, ``int``, ``dict`` or
  ``list``, a dataclass, a date, an integer past 64 bits) or not at all goes to ``json.dumps``, which
  encodes it or raises ``TypeError`` as it always did. Where the two differ: a float ``NaN`` or
  infinity becomes ``null`` (``json`` writes ``NaN``, which is not JSON: PostgreSQL's ``::json``
  refuses it), and a plain ``Enum`` or a ``UUID`` is encoded as its value or its canonical string
  (``json`` raises ``TypeError`` or calls ``default``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "loads"]

_OPTIONS = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
            | orjson.OPT_PASSTHROUGH_SUBCLASS)


def _not_plain(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is left to json")


_DIGITS_AS_NINES = bytes.maketrans(b"012345678", b"999999999")
_NINETEEN_DIGITS = b"9" * 19
"""A run of 19 digits may be an integer outside orjson's 64 bits (past 2**64 - 1, below -2**63),
which it reads as a float where json reads an int. Found by mapping every digit to 9 and searching
for nineteen of them: two passes in C, a tenth of what a regular expression's scan costs."""


def loads(text: str | bytes) -> Any:
    """Decode ``text`` exactly as ``json.loads`` does."""
    try:
        data = text.encode() if isinstance(text, str) else text
    except UnicodeEncodeError:  # a lone surrogate in the str itself: json reads it, orjson cannot
        return json.loads(text)
    if data.translate(_DIGITS_AS_NINES).find(_NINETEEN_DIGITS) < 0:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """Encode ``value`` as compact JSON (non-ASCII kept); ``default`` as in ``json.dumps``."""
    try:
        return orjson.dumps(value, default=_not_plain, option=_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=default)
