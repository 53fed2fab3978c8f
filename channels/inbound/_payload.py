"""Decoding a verified body into a JSON object (a non-object is malformed, never an exception)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from channels.inbound.event import MalformedPayload

MAX_JSON_DEPTH = 64


def json_object(body: bytes) -> dict[str, Any]:
    """``body`` as a JSON object; ``MalformedPayload`` for anything else (bad UTF-8, bad JSON,
    an array, absurd nesting)."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedPayload("body is not JSON") from exc
    if not isinstance(value, dict):
        raise MalformedPayload("body is not a JSON object")
    if _depth(value) > MAX_JSON_DEPTH:
        raise MalformedPayload("body is nested too deeply")
    return value


def form_payload(body: bytes) -> dict[str, Any]:
    """The JSON object in a form-encoded ``payload=`` field (GitHub's form content type)."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=16)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedPayload("body is not a form") from exc
    values = fields.get("payload")
    if not values or len(values) != 1:
        raise MalformedPayload("form has no single payload field")
    return json_object(values[0].encode("utf-8"))


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (a recursive walk is what we are guarding against)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest
