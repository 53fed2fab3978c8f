"""The metadata-filter language, evaluated in Python, and the row-level-security merge.

A filter is a dict of ``path -> condition``; every entry must hold (AND). A path may use dots to
reach into nested objects. A condition is a plain value (implicit equality) or a dict of operators:
``$eq $ne $lt $lte $gt $gte $in $nin``.

Everything unrecognised fails closed: an unknown operator, a range over incomparable values, a
malformed operand and a record without metadata all *exclude* the record. The filter often carries
the tenant scope, so guessing would risk a cross-tenant leak, where refusing only risks a missing hit.

Example::

    matches_metadata_filter({"org": "a", "n": 3}, {"org": "a", "n": {"$gte": 2}})   # True
    matches_metadata_filter({"org": "a"}, {"org": {"$regex": "a"}})                  # False (unknown)
    merge_rls({"org": "evil", "tag": "x"}, {"org": "a"})          # {"org": "a", "tag": "x"}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MISSING = object()
OPERATORS = frozenset({"$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$in", "$nin"})


def matches_metadata_filter(metadata: Mapping[str, Any] | None, filter: Mapping[str, Any] | None) -> bool:
    """Whether ``metadata`` satisfies ``filter`` (an empty or ``None`` filter admits everything).

    A record with no metadata never matches a non-empty filter.
    """
    if not filter:
        return True
    if not metadata or not isinstance(metadata, Mapping):
        return False
    for path, condition in filter.items():
        if not isinstance(path, str) or not path or path.startswith("$"):
            return False  # $and / $or / anything top-level we do not implement
        if not _matches(_resolve(metadata, path), condition):
            return False
    return True


def merge_rls(filter: Mapping[str, Any] | None, rls: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Merge an RLS filter over the caller's filter; on a shared key the RLS condition wins.

    Entries are ANDed, so the caller can only narrow the RLS scope, never widen it.
    """
    if not filter and not rls:
        return None
    return {**(filter or {}), **(rls or {})}


def _resolve(metadata: Mapping[str, Any], path: str) -> Any:
    if path in metadata:
        return metadata[path]
    node: Any = metadata
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _matches(value: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in condition):
        if not all(k in OPERATORS for k in condition):
            return False
        return all(_apply(op, value, operand) for op, operand in condition.items())
    return value is not _MISSING and _equal(value, condition)


def _apply(op: str, value: Any, operand: Any) -> bool:
    if op == "$eq":
        return value is not _MISSING and _equal(value, operand)
    if op == "$ne":
        return value is _MISSING or not _equal(value, operand)
    if op in ("$in", "$nin"):
        if not isinstance(operand, list | tuple):
            return False
        present = value is not _MISSING and any(_equal(value, item) for item in operand)
        return present if op == "$in" else not present
    if value is _MISSING or not _comparable(value, operand):
        return False
    if op == "$lt":
        return bool(value < operand)
    if op == "$lte":
        return bool(value <= operand)
    if op == "$gt":
        return bool(value > operand)
    return bool(value >= operand)  # $gte


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _comparable(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return bool(a == a and b == b)  # NaN compares false both ways; refuse it
    return isinstance(a, str) and isinstance(b, str)


def _equal(a: Any, b: Any) -> bool:
    # True == 1 in Python; a filter on a flag must not admit a count of 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if type(a) is not type(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return False
    return bool(a == b)
