"""Structured output: a pydantic model class or a JSON-schema dict → ``result.output``.

Example::

    class Answer(BaseModel):
        answer: str
        confidence: float = 0.5

    spec = OutputSpec.coerce(Answer)
    spec.json_schema["required"]            # ["answer"]
    spec.parse('{"answer": "42"}')          # Answer(answer='42', confidence=0.5)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from lunora_jobs.errors import InvalidAgentOptionError, OutputParseError

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass(frozen=True)
class OutputSpec:
    """The agent's structured-answer contract: ``json_schema`` goes to the model, ``parse`` reads it back."""

    json_schema: dict[str, Any]
    model_class: type[BaseModel] | None = None
    name: str = "output"
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            cls = jsonschema.validators.validator_for(self.json_schema)
            cls.check_schema(self.json_schema)
        except jsonschema.SchemaError as exc:
            raise InvalidAgentOptionError(f"output is not a valid JSON schema: {exc.message}") from exc
        object.__setattr__(self, "_validator", cls(self.json_schema))

    @classmethod
    def coerce(cls, value: OutputSpec | type[BaseModel] | dict[str, Any] | None) -> OutputSpec | None:
        """Build from a pydantic model class or a JSON-schema dict (None passes through)."""
        if value is None or isinstance(value, OutputSpec):
            return value
        if isinstance(value, type) and issubclass(value, BaseModel):
            return cls(
                json_schema=value.model_json_schema(), model_class=value, name=_safe_name(value.__name__)
            )
        if isinstance(value, dict):
            schema = dict(value)
            if "type" not in schema and "properties" in schema:
                schema["type"] = "object"
            return cls(json_schema=schema, name=_safe_name(str(schema.get("title", "output"))))
        raise InvalidAgentOptionError(
            f"output must be a pydantic model class or a JSON-schema dict, not {type(value).__name__}; "
            "e.g. output=Answer or output={'type': 'object', 'properties': {...}}."
        )

    def parse(self, text: str | None) -> Any:
        """Parse the model's final text: a pydantic instance (model class) or a validated dict.

        Raises ``OutputParseError`` when the text is not JSON or does not match the schema.
        """
        if text is None or not text.strip():
            raise OutputParseError(
                "The model returned no text where a structured (JSON) answer was expected."
            )
        fenced = _FENCE.match(text)
        raw = fenced.group(1) if fenced else text.strip()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise OutputParseError(
                f"The model's answer is not valid JSON ({exc.msg} at char {exc.pos}): {raw[:200]!r}"
            ) from exc
        if self.model_class is not None:
            try:
                return self.model_class.model_validate(data)
            except ValidationError as exc:
                raise OutputParseError(f"The model's answer does not match {self.name}: {exc}") from exc
        self.check(data)
        return data

    def check(self, data: Any) -> None:
        """Validate an already-decoded value against the schema (``OutputParseError`` if it fails)."""
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(data))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "$"
            raise OutputParseError(
                f"The model's answer does not match the output schema at {where}: {error.message}"
            )


def _safe_name(name: str) -> str:
    # OpenAI's response_format name must match ^[a-zA-Z0-9_-]{1,64}$.
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "output"
