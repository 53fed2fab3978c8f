"""Translate the rag metadata-filter language into a Qdrant filter, failing closed.

One translator serves both Qdrant bindings (``qdrant_client.models`` and the embedded
``qdrant_edge``): they spell the same condition tree with different classes, so each binding
passes a small ``QdrantFilterBuilder``. What cannot be expressed exactly (an unknown operator, a
range over a string, equality with a list, ``$or``...) becomes ``NO_MATCH``: the store then returns
nothing rather than a wider result, because the filter may carry a tenant scope and guessing wrong
there is a cross-tenant leak.

Semantics follow ``rag.filters.matches_metadata_filter``: a missing key fails equality, ranges and
``$in`` but passes ``$ne`` / ``$nin`` (Qdrant's ``must_not`` does the same). Numbers compare as
numbers (``3 == 3.0``), so numeric equality is a closed range rather than an integer match. Where
Qdrant is wider than the Python function (an array field matches if *any* element does), the stores
re-check each hit with ``matches_metadata_filter``; where it would be narrower (string ranges,
object equality, ``None``) the translation is ``NO_MATCH``. A binding that cannot express a
condition at all returns ``None`` from the builder: the condition is left out of the native filter
(wider) and ``Translation.exact`` turns False, telling the store to over-fetch and re-check.

Example::

    translate({"tenant": "acme", "year": {"$gte": 2020}}, builder, prefix="metadata.")
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar

C = TypeVar("C")


class _NoMatch(Exception):
    """Raised inside the translator: the filter matches nothing (or cannot be narrowed exactly)."""


_RANGE_OPS: Final = {"$lt": "lt", "$lte": "lte", "$gt": "gt", "$gte": "gte"}
KNOWN_OPERATORS: Final = frozenset({"$eq", "$ne", "$in", "$nin", *_RANGE_OPS})


@dataclass
class Translation(Generic[C]):
    """The native ``must`` conditions of a filter.

    ``nothing``: no record can match (return nothing). ``exact``: False when some condition had
    no native form and was left out -- the native result is then a superset to re-check in Python.
    """

    conds: list[C] = field(default_factory=list)
    exact: bool = True
    nothing: bool = False


class QdrantFilterBuilder(Protocol, Generic[C]):
    """Constructors of one Qdrant binding's filter classes."""

    def match_value(self, key: str, value: str | int | bool) -> C | None:
        """``key == value`` for a keyword, integer or bool; ``None`` when the binding cannot express it."""
        ...

    def value_range(self, key: str, bounds: dict[str, float]) -> C:
        """Numeric range; ``bounds`` uses the keys ``lt lte gt gte``."""
        ...

    def filter(self, must: list[C], should: list[C], must_not: list[C]) -> C:
        """A nested boolean filter (usable as a condition and as the top-level filter)."""
        ...


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def needs_metadata_guard(flt: Mapping[str, Any] | None) -> bool:
    """Whether the native filter must also exclude records without metadata.

    Only ``$ne`` / ``$nin`` can admit an empty-metadata record natively (a missing key passes them);
    every other condition already needs the key. Skipping the guard otherwise keeps one payload
    lookup per candidate off the hot path.
    """
    if not flt:
        return False
    return any(isinstance(spec, Mapping) and ("$ne" in spec or "$nin" in spec) for spec in flt.values())


class _Translator(Generic[C]):
    def __init__(self, builder: QdrantFilterBuilder[C]) -> None:
        self.b = builder
        self.exact = True

    def equals(self, key: str, value: object) -> C | None:
        if isinstance(value, str | bool):
            cond = self.b.match_value(key, value)
            if cond is None:
                self.exact = False
            return cond
        if _is_number(value) and value == value:
            # An integer match misses a stored 3.0; a closed range is numeric equality for both.
            number = float(value)  # type: ignore[arg-type]
            return self.b.value_range(key, {"gte": number, "lte": number})
        raise _NoMatch  # None, NaN, lists, objects: no exact native equality

    def field(self, key: str, spec: object) -> list[C]:
        """Conditions (all must hold) for one field's predicate."""
        if not isinstance(spec, Mapping):
            cond = self.equals(key, spec)
            return [] if cond is None else [cond]
        if not spec or any(op not in KNOWN_OPERATORS for op in spec):
            raise _NoMatch
        out: list[C] = []
        bounds: dict[str, float] = {}
        for op, operand in spec.items():
            if op in _RANGE_OPS:
                if not _is_number(operand) or operand != operand:
                    raise _NoMatch  # a range over an incomparable value fails closed
                bounds[_RANGE_OPS[op]] = float(operand)
            elif op in ("$in", "$nin"):
                if not isinstance(operand, list | tuple) or (op == "$in" and not operand):
                    raise _NoMatch
                alts = [self.equals(key, v) for v in operand]
                conds = [a for a in alts if a is not None]
                if op == "$nin":
                    out.append(self.b.filter([], [], conds))  # leaving one out only widens
                elif len(conds) == len(alts):  # a missing alternative: any value may match
                    out.append(self.b.filter([], conds, []))
            else:
                cond = self.equals(key, operand)
                if cond is not None:
                    out.append(cond if op == "$eq" else self.b.filter([], [], [cond]))
        if bounds:
            out.append(self.b.value_range(key, bounds))
        return out


def translate(
    flt: Mapping[str, Any] | None, builder: QdrantFilterBuilder[C], *, prefix: str = ""
) -> Translation[C]:
    """The native conditions equivalent to ``flt`` (none for no filter).

    ``prefix`` is where metadata lives in the payload (``"metadata."``); dot paths pass through.
    """
    if not flt:
        return Translation()
    if not isinstance(flt, Mapping):
        return Translation(nothing=True)
    t = _Translator(builder)
    must: list[C] = []
    try:
        for key, spec in flt.items():
            if not isinstance(key, str) or not key or key.startswith("$"):
                raise _NoMatch  # $and / $or / $not are not part of the language
            must.extend(t.field(prefix + key, spec))
    except _NoMatch:
        return Translation(nothing=True)
    return Translation(must, exact=t.exact)
