"""The memory kind: ``memory:*`` steps, each memoized in the ledger like any step.

Run-start reads (``agent.memory_reads``: ``memory:retrieve`` for semantic inject memory,
``memory:retrieve:<skill>`` for a skill's knowledge, ``memory:recall`` for episodic memory,
``memory:traverse`` for graph memory) run
before ``llm:turn:0``, one after the other; each records ``{"context", ...}`` and the last hands on to
turn 0. Every turn's prompt injects the recorded contexts (``memory.inject``), so a replay or a later
turn never reads again. A redelivered read re-plans from its memo: the successor lost with a crashed
worker is dispatched again.

Post-run writes (``agent.memory_writes``: ``memory:episode``, ``memory:extract``) are dispatched
once a run completed (``handover.run_ended``) and recovered by the sweep when their worker died
(``stalled_writes``). They are best-effort: a write that keeps failing records why and never touches
the answered run.

Identity: everything runs as the run's owner (the run row's, which only verified callers set). A
semantic read refused by its source (an ``rls_filter`` and an anonymous run) fails the run at once,
naming the cause; the owner-keyed tiers skip anonymous runs.
"""

from __future__ import annotations

from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import TERMINAL
from lunora_jobs.engine.kinds.base import After, DispatchNext, StepKind, StepState, Work
from lunora_jobs.engine.plan import plan_after_read
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import MEMORY_PREFIX
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.memory import tiers
from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.inject import run_query
from lunora_jobs.memory.options import MemoryOption, SemanticMemory
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.memory.search import search
from lunora_jobs.models.base import Model
from lunora_jobs.store.records import RunRecord, StepCompletion, UsageEntry

ANONYMOUS: dict[str, Any] = {"context": "", "skipped": "anonymous run: this memory is keyed by owner"}


class MemoryStep(StepKind):
    """``memory:<what>``: a run-start read or a post-run write."""

    name, prefix, route = "memory", MEMORY_PREFIX, "memory"
    after_run_end = True  # post-run writes run once the run completed; reads refuse ended runs in admit

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """Reads belong to a live run; writes only follow a completed one."""
        run, agent = state.run, state.agent
        assert run is not None and agent is not None
        if state.step in agent.memory_writes:
            return None if run.status == "completed" else "skipped"
        if run.status not in TERMINAL:
            return None
        memo = deps.store.get_step(state.run_id, state.step)  # as the claim stage answers other kinds
        if memo is not None and memo.status == "completed":
            state.result = memo.result
            return "replayed"
        return "skipped"

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Run the read or write this step names (an unknown one records an empty result)."""
        run, agent = state.run, state.agent
        assert run is not None and agent is not None
        identity = MemoryIdentity(run.owner, run.id, run_info(run).thread_key, agent.name)
        for memory in agent.memories:
            if memory.read_step == state.step:
                return Work(StepCompletion(result=self._read(deps, run, memory, identity)), self._next(state))
            if memory.write_step == state.step:
                return self._write(deps, run, agent, memory, identity)
        # The agent was redeclared without this memory while the run was in flight: nothing to do.
        then = None if state.step in agent.memory_writes else self._next(state)
        return Work(StepCompletion(result={"context": "", "skipped": "no such memory"}), then)

    def give_up(self, deps: EngineDeps, state: StepState, error: str) -> Work | None:
        """A post-run write that keeps failing is recorded as skipped: it never fails an answered run."""
        agent = state.agent
        if agent is not None and state.step in agent.memory_writes:
            return Work(StepCompletion(result={"skipped": error}))
        return None

    def fatal(self, exc: Exception) -> bool:
        """A refusal (``PermissionError``: RLS without an identity) or a configuration error fails
        the run at once: retrying cannot change who the run is for."""
        return isinstance(exc, PermissionError | ConfigurationError | TypeError)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """A completed read delivered again: dispatch its successor again (it may have been lost)."""
        agent = state.agent
        assert agent is not None
        return None if state.step in agent.memory_writes else self._next(state)

    def _next(self, state: StepState) -> DispatchNext:
        agent = state.agent
        assert agent is not None
        return DispatchNext(plan_after_read(state.run_id, agent.memory_reads, state.step).dispatch)

    def _read(
        self, deps: EngineDeps, run: RunRecord, memory: MemoryOption, identity: MemoryIdentity
    ) -> dict[str, Any]:
        query = run_query(run_info(run).input)
        if isinstance(memory, SemanticMemory):
            key = f"{run.id}:{memory.step}"
            found = search(memory, query, identity, lambda path, args: deps.run_function(path, args, key))
            return found.to_json()
        if identity.owner is None or identity.anonymous:
            return dict(ANONYMOUS)
        return tiers.read(rows_for(deps.store), memory, identity.owner, query, deps.now())

    def _write(
        self, deps: EngineDeps, run: RunRecord, agent: AgentDefinition, memory: MemoryOption,
        identity: MemoryIdentity,
    ) -> Work:
        if identity.owner is None or identity.anonymous or isinstance(memory, SemanticMemory):
            return Work(StepCompletion(result=dict(ANONYMOUS)))
        model = _extraction_model(deps, agent, memory.extraction_model)
        answer = run.result.get("text") if isinstance(run.result, dict) else None
        result, usage = tiers.write(
            rows_for(deps.store), memory, model, owner=identity.owner, run_id=run.id,
            request=run_query(run_info(run).input), answer=str(answer or ""), now=deps.now(),
        )
        entry = UsageEntry(
            actor=run.owner, model=model.name, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, thread_id=run.thread_id, run_id=run.id,
            step=memory.write_step, cost_usd=usage.cost_usd,
        )
        return Work(StepCompletion(result=result, usage=entry))


def _extraction_model(deps: EngineDeps, agent: AgentDefinition, spec: Any) -> Model:
    """The cheaper model a memory write may name; the agent's own otherwise (and always in a harness,
    which never reaches a real provider through a model string)."""
    if spec is None or (isinstance(spec, str) and deps.model_override is not None):
        return deps.model_for(agent)
    return deps.resolve(f"memory:{agent.name}", spec)
