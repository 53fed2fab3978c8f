"""A scripted model for memory tests: answers keyed by the user's message, memory-write replies
(summaries, extractions) keyed by the exchange's question — so several runs on several threads each
get their own scripted replies, whatever the order."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lunora_jobs.memory.episodic import INSTRUCTIONS as SUMMARY_INSTRUCTIONS
from lunora_jobs.memory.graph import INSTRUCTIONS as EXTRACTION_INSTRUCTIONS
from lunora_jobs.models.base import ModelTurn
from lunora_jobs.models.scripted import final_turn


class KeyedModel:
    """``answers[question]`` for a turn, ``summaries[question]`` for a ``memory:episode`` call,
    ``extractions[question]`` (JSON, or a raw string) for a ``memory:extract`` call; a missing key
    raises ``KeyError`` (a failed model call)."""

    name = "keyed"

    def __init__(
        self, answers: Mapping[str, str], summaries: Mapping[str, str] | None = None,
        extractions: Mapping[str, Any] | None = None,
    ) -> None:
        self.answers = dict(answers)
        self.summaries = dict(summaries or {})
        self.extractions = dict(extractions or {})
        self.calls: list[str] = []

    def generate(self, messages: Sequence[dict[str, Any]], **options: Any) -> ModelTurn:
        """The scripted reply for this prompt."""
        last = str(messages[-1]["content"])
        if last == SUMMARY_INSTRUCTIONS:
            question = str(messages[-3]["content"])
            self.calls.append(f"summary:{question}")
            return final_turn(self.summaries[question])
        if last == EXTRACTION_INSTRUCTIONS:
            question = str(messages[-3]["content"])
            self.calls.append(f"extract:{question}")
            reply = self.extractions[question]
            return final_turn(reply if isinstance(reply, str) else json.dumps(reply))
        self.calls.append(f"turn:{last}")
        return final_turn(self.answers[last])
