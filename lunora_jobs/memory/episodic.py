"""Episodic memory: one sentence per answered run, recalled by recency for the same owner.

``memory:episode`` (after a run completed) asks the model once to condense the exchange (the run's
input and its final answer) into one sentence and records it under the run id, so a crash and a
retry never record two. ``memory:recall`` (at run start) injects the owner's latest ``recall``
episodes, oldest first, one ``- <summary>`` line each. Anonymous runs skip both: the tier is keyed
by the verified owner.
"""

from __future__ import annotations

from collections.abc import Sequence

from lunora_jobs.models.base import Model, Usage

SUMMARY_CHARS = 400
"""The longest episode kept (a model that ignores "one sentence" is cut, never stored whole)."""

INSTRUCTIONS = (
    "Summarize the exchange above in ONE short sentence for the assistant's long-term memory of this "
    "user: what the user wanted and what was answered or done. Answer with the sentence only."
)


def summarize(model: Model, request: str, answer: str) -> tuple[str, Usage]:
    """One model call: the exchange as one sentence (whitespace collapsed, cut to ``SUMMARY_CHARS``)."""
    turn = model.generate([  # the exchange as it happened, then the ask: any chat model reads it as such
        {"role": "user", "content": request},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": INSTRUCTIONS},
    ])
    text = " ".join((turn.text or "").split())
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1].rstrip() + "…"
    return text, turn.usage


def render(summaries: Sequence[str]) -> str:
    """The recall context: ``- <summary>`` lines, oldest first."""
    return "\n".join(f"- {s}" for s in summaries)
