"""``RunResult``: how a run ended, read back from ``agent_runs``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.models.base import Usage
from lunora_jobs.store.records import RunRecord


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of a run.

    ``stopped`` is ``"final"`` (the model answered without tool calls), ``"maxTurns"``,
    ``"stopCondition"`` or ``"cancelled"`` (None while running or when the run failed); ``text`` is the
    last turn's text; ``output`` the structured answer (a pydantic instance when the agent's
    ``output`` is a model class); ``usage`` the tokens summed over every turn; ``error`` why a failed
    run failed.
    """

    run_id: str
    status: str
    stopped: str | None = None
    text: str | None = None
    output: Any = None
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    error: str | None = None

    @property
    def done(self) -> bool:
        """True once the run can no longer change."""
        return self.status in ("completed", "failed", "cancelled")


def run_result(run: RunRecord, agent: AgentDefinition | None = None) -> RunResult:
    """Build a ``RunResult`` from the run row (re-hydrating a pydantic output when possible)."""
    data = run.result if isinstance(run.result, dict) else {}
    output = data.get("output")
    model_class = agent.output.model_class if agent is not None and agent.output is not None else None
    if output is not None and model_class is not None:
        output = model_class.model_validate(output)
    return RunResult(
        run_id=run.id, status=run.status, stopped=run.stopped, text=data.get("text"), output=output,
        usage=Usage(run.input_tokens, run.output_tokens), turns=run.turns,
        error=None if run.error is None else str(run.error),
    )
