"""``ReplyHooks``: when a channel run ends, dispatch its ``reply:<channel>`` step; when that step
finishes, close the pending reply in the inbound ledger."""

from __future__ import annotations

from channels.ledger import ledger_for
from channels.replies.kind import reply_step
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.hooks import StepHooks, StepInfo
from lunora_jobs.store.records import RunRecord


class ReplyHooks(StepHooks):
    """Registered on an app by ``channels.attach`` for the agents in ``agents`` (those declaring
    ``on_inbound`` or ``on_email``). A process that dies between a run's end and this dispatch
    leaves the reply pending; ``sweep_replies`` dispatches it then."""

    def __init__(self, deps: EngineDeps, agents: frozenset[str]) -> None:
        self.deps = deps
        self.agents = agents

    def run_finished(self, run: RunRecord, status: str) -> None:
        """Dispatch the reply step of a channel run (the ledger claim dedupes a second dispatch)."""
        if run.agent not in self.agents:
            return
        target = ledger_for(self.deps.store).reply_for(run.id)
        if target is not None:
            self.deps.dispatcher.dispatch([StepTask(run.id, reply_step(str(target["channel"])), "step")])

    def step_finished(self, step: StepInfo, status: str) -> None:
        """A recorded reply step closes the pending reply."""
        if step.kind == "reply" and status == "completed":
            ledger_for(self.deps.store).reply_done(step.run_id, self.deps.now())
