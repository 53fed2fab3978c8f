"""The memory kind: ``memory:*`` steps.

Run-start reads (``memory:retrieve`` for the agent's own memory, ``memory:retrieve:<skill>`` for a
skill's knowledge, in ``agent.memory_reads`` order) run before ``llm:turn:0``, one after the other:
each searches its source once with the run's input as the run's owner and memoizes the result
(``{"context", "hits", "sources"}``) in its ledger row; the last hands on to turn 0. Every turn's
prompt injects the recorded contexts (``memory.inject``), so a replay or a later turn never searches
again. A redelivered read re-plans from its memo: the successor lost with a crashed worker is
dispatched again.

A read that is refused (the source's ``rls_filter`` and an anonymous run, a misconfigured source)
fails the run at once, naming the cause: memory fails closed, it never answers with another
identity's rows or silently without the context it was declared with.
"""

from __future__ import annotations

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.kinds.base import After, DispatchNext, StepKind, StepState, Work
from lunora_jobs.engine.plan import plan_after_read
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import MEMORY_PREFIX
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.inject import run_query
from lunora_jobs.memory.search import search
from lunora_jobs.store.records import StepCompletion


class MemoryStep(StepKind):
    """``memory:<what>``: a memory read or write, memoized in the ledger like any step."""

    name, prefix, route = "memory", MEMORY_PREFIX, "memory"

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Search the memory this read belongs to; hand on to the next read (or turn 0)."""
        run, agent = state.run, state.agent
        assert run is not None and agent is not None
        memory = next((m for m in agent.memories if m.step == state.step and m.mode == "inject"), None)
        then = self._next(state)
        if memory is None:  # the agent was redeclared without it while the run was queued
            return Work(StepCompletion(result={"context": "", "hits": [], "sources": []}), then)
        info = run_info(run)
        identity = MemoryIdentity(run.owner, run.id, info.thread_key, agent.name)
        key = f"{run.id}:{state.step}"
        found = search(memory, run_query(info.input), identity,
                       lambda path, args: deps.run_function(path, args, key))
        return Work(StepCompletion(result=found.to_json()), then)

    def fatal(self, exc: Exception) -> bool:
        """A refusal (``PermissionError``: RLS without an identity) or a configuration error fails
        the run at once: retrying cannot change who the run is for."""
        return isinstance(exc, PermissionError | ConfigurationError | TypeError)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """A completed read delivered again: dispatch its successor again (it may have been lost)."""
        return self._next(state)

    def _next(self, state: StepState) -> DispatchNext:
        agent = state.agent
        assert agent is not None
        return DispatchNext(plan_after_read(state.run_id, agent.memory_reads, state.step).dispatch)
