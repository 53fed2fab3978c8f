"""A deterministic, stateless model for the independent-approval tests: it answers from the prompt
alone (as a replayed turn must), so every worker process agrees on every turn.

``charge <n>`` calls ``charge_card`` (gated above 5000) then, once the tool answered, says what it
saw; ``charge <n> and note <v>`` also calls ``note`` in the same turn (the run goes on beside the
proposal). Anything else is answered directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.models.base import ModelTurn, ToolCall, ToolSpec


class ChargeModel:
    """See the module docstring."""

    name = "proposal-test-model"

    def generate(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
        tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One deterministic turn."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last = users[-1] if users else -1
        text = str(messages[last].get("content") if users else "")
        results = [m for m in messages[last + 1 :] if m.get("role") == "tool"]
        if results:
            return ModelTurn(text="saw: " + " | ".join(str(m.get("content")) for m in results))
        words = text.split()
        if words[:1] == ["charge"]:
            calls = [ToolCall(f"charge-{words[1]}", "charge_card", {"amount": float(words[1])})]
            if words[2:4] == ["and", "note"]:
                calls.append(ToolCall(f"note-{words[4]}", "note", {"value": words[4]}))
            return ModelTurn(tool_calls=calls)
        return ModelTurn(text=f"answer to {text}")
