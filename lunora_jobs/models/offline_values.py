"""Deterministic values for a JSON schema, drawn from a piece of text (the offline model's "reasoning").

Example::

    fill_schema({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "What's the weather in Berlin?")
    # {"city": "Berlin"}
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019_-]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_URL = re.compile(r"https?://\S+")
_PROPER_FIELDS = (
    "city",
    "location",
    "place",
    "country",
    "town",
    "name",
    "person",
    "user",
    "customer",
    "company",
    "region",
    "state",
    "destination",
    "origin",
    "author",
    "team",
)
_ID_FIELDS = ("id", "order", "number", "sku", "code", "ticket", "invoice")
_ADDRESS_FIELDS = {"to", "from", "cc", "bcc", "recipient", "sender"}
_QUESTION_WORDS = {
    "what",
    "what's",
    "whats",
    "how",
    "who",
    "where",
    "when",
    "why",
    "which",
    "please",
    "can",
    "could",
    "tell",
    "show",
    "is",
    "are",
    "do",
    "does",
    "find",
    "get",
    "i",
    "look",
    "give",
}


def words(text: str) -> list[str]:
    """The word tokens of ``text`` (letters, digits, inner apostrophes and dashes)."""
    return _WORD.findall(text)


def fill_schema(
    schema: dict[str, Any], text: str, field_name: str | None = None, root: dict[str, Any] | None = None
) -> Any:
    """A value that validates against ``schema``, chosen from ``text`` by the field's name and type."""
    root = root if root is not None else schema
    if "$ref" in schema:
        return fill_schema(_resolve_ref(root, schema["$ref"]), text, field_name, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return _pick_enum(schema["enum"], text)
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            options = [o for o in schema[combinator] if o.get("type") != "null"] or schema[combinator]
            return fill_schema(options[0], text, field_name, root)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve_ref(root, part["$ref"]) if "$ref" in part else part)
        return fill_schema(merged, text, field_name, root)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        wanted = schema["required"] if "required" in schema else list(props)
        return {name: fill_schema(props.get(name, {}), text, name, root) for name in wanted}
    if kind == "array":
        count = max(int(schema.get("minItems", 0)), 1 if schema.get("items") else 0)
        return [fill_schema(schema.get("items") or {}, text, field_name, root) for _ in range(count)]
    if "default" in schema:
        return schema["default"]
    if kind in ("integer", "number"):
        return _number(schema, text, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema, text, (field_name or "").lower())


def _resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _pick_enum(options: list[Any], text: str) -> Any:
    lowered = text.lower()
    for option in options:
        if isinstance(option, str) and re.search(rf"\b{re.escape(option.lower())}\b", lowered):
            return option
    return options[0]


def _number(schema: dict[str, Any], text: str, *, integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    for match in _NUMBER.findall(text):
        value = float(match)
        if (
            (low is None or value >= low)
            and (high is None or value <= high)
            and (not integer or value.is_integer())
        ):
            return int(value) if integer else value
    value = float(low) + (1 if "exclusiveMinimum" in schema else 0) if low is not None else 0.0
    return int(value) if integer else value


def _string(schema: dict[str, Any], text: str, name: str) -> str:
    fmt = schema.get("format")
    if fmt == "email" or "email" in name or (name in _ADDRESS_FIELDS and _EMAIL.search(text)):
        found = _EMAIL.search(text)
        value = found.group(0) if found else "user@example.com"
    elif fmt in ("uri", "url") or "url" in name:
        found_url = _URL.search(text)
        value = found_url.group(0) if found_url else "https://example.com"
    elif any(_matches(name, key) for key in _ID_FIELDS):
        value = next((w for w in words(text) if any(c.isdigit() for c in w)), _proper_noun(text))
    elif name in _ADDRESS_FIELDS or any(_matches(name, key) for key in _PROPER_FIELDS):
        value = _proper_noun(text)
    else:
        value = re.sub(r"\s+", " ", text).strip()
    max_len = int(schema.get("maxLength", 10_000))
    value = value[:max_len]
    return value.ljust(int(schema.get("minLength", 0)), "_")


def _matches(name: str, key: str) -> bool:
    return name == key or name.endswith("_" + key) or name.startswith(key + "_") or name.endswith(key)


def _proper_noun(text: str) -> str:
    """The first capitalized word not opening the sentence, else a capitalized opener, else the last word."""
    tokens = words(text)
    capitalized = [
        (i, w) for i, w in enumerate(tokens) if w[:1].isupper() and w.lower() not in _QUESTION_WORDS
    ]
    inner = [w for i, w in capitalized if i > 0]
    if inner:
        return inner[0]
    if capitalized:
        return capitalized[0][1]
    content = [w for w in tokens if w.lower() not in _QUESTION_WORDS]
    return content[-1] if content else (tokens[-1] if tokens else "unknown")
