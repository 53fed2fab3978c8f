"""The ``reply:<channel>`` step: a channel run's answer, posted back as a durable step of the run.

It runs after the run ended (``after_run_end``) and is claimed in the step ledger like any step, so
two deliveries of its task never post at once; a worker SIGKILLed mid-post leaves the lease to
expire (twice the delivery timeout plus 5 s) and the re-dispatched step runs again with
``Reply.retry`` set, which makes the deliverer look for its own earlier post (keyed by
``<run_id>:<step>``) before posting. A ``DeliveryError`` is retried up to the agent's
``max_attempts``; the last failure is recorded as the step's result, never as a run failure.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.delivery import DeliveryError, Reply, deliverer_for
from channels.inbound.event import ReplyTarget
from channels.ledger import ledger_for
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.kinds import StepKind, StepState, Work
from lunora_jobs.inbound import coerce_inbound
from lunora_jobs.store.records import RunRecord, StepCompletion

log = logging.getLogger("channels.replies")

REPLY_PREFIX = "reply:"
FAILED_TEXT = "Sorry, I could not complete this request."
"""What a failed run answers (its error stays in the run; the channel gets no internal detail)."""


def reply_step(channel: str) -> str:
    """The ledger name of the reply step of a run that came from ``channel``."""
    return f"{REPLY_PREFIX}{channel}"


def reply_lease_ms(deps: EngineDeps) -> int:
    """How long a delivery holds its claim: a retry's lookup and the post, each within the timeout."""
    return int((2 * deps.settings.reply_timeout_s + 5) * 1000)


def answer_text(run: RunRecord) -> str | None:
    """What to post for an ended run: its final text (or structured output as JSON), a fixed apology
    for a failed run, nothing for a cancelled one."""
    if run.status == "failed":
        return FAILED_TEXT
    if run.status != "completed":
        return None
    result: dict[str, Any] = run.result if isinstance(run.result, dict) else {}
    text = result.get("text")
    if isinstance(text, str) and text.strip():
        return text
    output = result.get("output")
    return json.dumps(output, sort_keys=True, default=str) if output is not None else None


class ReplyStep(StepKind):
    """``reply:<channel>``: deliver the run's answer to the ``ReplyTarget`` its delivery recorded."""

    name, prefix, route = "reply", REPLY_PREFIX, "step"
    after_run_end = True

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """Skip a run that is still going (its end dispatches the reply) or that has no reply target."""
        run = state.run
        assert run is not None
        if run.status not in ("completed", "failed", "cancelled"):
            return "skipped"
        target = ledger_for(deps.store).reply_for(run.id)
        if target is None:
            return "skipped"
        state.subject = ReplyTarget.from_json(target)
        return None

    def claim(self, deps: EngineDeps, state: StepState) -> None:
        """The ledger claim, with the delivery's own (short) lease."""
        assert state.agent is not None
        state.claim = deps.store.claim_step(
            state.run_id, state.step, owner=deps.worker_id, lease_ms=reply_lease_ms(deps),
            max_attempts=state.agent.max_attempts,
        )

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Post the answer; the completion records how it went."""
        run, target, claim, agent = state.run, state.subject, state.claim, state.agent
        assert run is not None and isinstance(target, ReplyTarget) and claim is not None and agent is not None
        text = answer_text(run)
        if text is None:
            return Work(StepCompletion(result={"delivered": "nothing-to-say", "run_status": run.status}))
        token_env = next((o.token_env for o in coerce_inbound(f"Agent {agent.name!r}", agent.on_inbound)
                          if o.channel == target.channel), None)
        reply = Reply(target, text, key=f"{run.id}:{state.step}", retry=claim.step.attempt > 1,
                      token=deps.settings.secret(token_env) if token_env else None)
        delivered = deliverer_for(target.channel, deps.settings).deliver(reply)
        log.info("lunora reply: run %s -> %s (%s)", run.id, target.channel, delivered)
        return Work(StepCompletion(result={"delivered": delivered, "channel": target.channel}))

    def give_up(self, deps: EngineDeps, state: StepState, error: str) -> Work | None:
        """Out of attempts: record the failure as the step's result (the run's outcome stands)."""
        log.warning("lunora reply: giving up on run %s: %s", state.run_id, error)
        return Work(StepCompletion(result={"delivered": "failed", "error": error[:500]}))

    def fatal(self, exc: Exception) -> bool:
        """Only a provider refusal is worth retrying; anything else is a bug or a configuration error."""
        return not isinstance(exc, DeliveryError)
