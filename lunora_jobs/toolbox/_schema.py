"""The input schema shape the toolbox's one-tool-many-ops tools share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def op_schema(properties: dict[str, Any], required: Sequence[str] = ("op",)) -> dict[str, Any]:
    """A closed object schema (no property beyond ``properties``) requiring ``required``."""
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}
