"""``agent_harness``: drive an agent through the real durable engine with a scripted model.

The harness builds a ``Lunora`` app over ``InMemoryStore`` (or the store you pass), the
``InProcessDispatcher`` and a ``LocalLock`` — the same step code the Celery workers run — with every
model call answered by a ``ScriptedModel`` playing your script. Functions your tools dispatch with
``ctx.run(path, args)`` are recorded in ``harness.dispatches`` and answered by the ``functions`` stubs.

Example::

    harness = agent_harness(support, script=[
        tool_call_turn("call_1", "get_weather", {"city": "Berlin"}),
        final_turn("It's sunny in Berlin."),
    ], functions={"weather:lookup": lambda args: {"temp_c": 21}})
    result = harness.run(input="weather in Berlin?", thread_key="t1")
    assert result.stopped == "final"
    assert [m.role for m in harness.messages("t1")] == ["user", "assistant", "tool", "assistant"]
    assert {"path": "weather:lookup", "args": {"city": "Berlin"}} in harness.dispatches
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.engine.locks import LocalLock, RunLock
from lunora_jobs.errors import NotFoundError
from lunora_jobs.governance import Quota
from lunora_jobs.models.base import Model, ModelTurn, ToolChoice, ToolSpec
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.runtime.app import Lunora
from lunora_jobs.runtime.result import RunResult
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.store.records import MessageRecord, StepRecord, ThreadRecord

__all__ = [
    "FakeClock",
    "Harness", "RecordingModel", "agent_harness", "final_turn", "tool_call_turn", "tool_calls_turn",
]


class FakeClock:
    """An epoch-ms clock a test moves by hand: pass it as a store's ``clock`` and ``advance`` past a
    lease or a schedule instead of sleeping.

    Example::

        clock = FakeClock()
        store = InMemoryStore(clock=clock)
        clock.advance(60_000)   # a minute later, instantly
    """

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``."""
        self.now += ms


class RecordingModel:
    """Wraps a model and records every prompt it is sent (``calls``): how tests prove a replay did
    not call the model again."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[list[dict[str, Any]]] = []
        self.call_options: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """Record the prompt, then ask the wrapped model."""
        with self._lock:
            self.calls.append([dict(m) for m in messages])
            self.call_options.append({"tools": [t.name for t in tools], "tool_choice": tool_choice,
                                      "output_schema": output_schema})
        return self.inner.generate(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )


class Harness:
    """An agent wired to the real engine over a test store. Build it with ``agent_harness``."""

    def __init__(
        self, agent: AgentDefinition, model: Model, *, functions: Mapping[str, Callable[..., Any]] | None,
        store: AgentStore, lock: RunLock | None = None, extra_agents: Sequence[AgentDefinition] = (),
        dispatcher: InProcessDispatcher | None = None, quotas: Sequence[Quota] = (),
    ) -> None:
        self.agent = agent
        self.model = RecordingModel(model)
        self.store = store
        self.dispatches: list[dict[str, Any]] = []
        """Every ``ctx.run(path, args)`` a tool made, as ``{"path": ..., "args": ...}``, in order."""
        self._stubs = dict(functions or {})
        self.dispatcher = dispatcher or InProcessDispatcher(sleep=_backoff_sleep(store))
        self.app = Lunora(
            [agent, *extra_agents], store=store, dispatcher=self.dispatcher, lock=lock or LocalLock(),
            # No scheduler thread: a test fires due schedules itself (``harness.app.dispatch_due()``).
            settings=Settings(openai_api_key=None, openai_base_url=None, scheduler_thread=False),
            model=self.model, quotas=quotas,
        )
        # Record every ctx.run, stubbed or not (the seed's harness.dispatches).
        self.app.deps.run_function = self._run_function

    def _run_function(self, path: str, args: dict[str, Any], idempotency_key: str | None = None) -> Any:
        self.dispatches.append({"path": path, "args": args})
        stub = self._stubs.get(path)
        return None if stub is None else stub(args)

    def run(
        self, input: Any = None, *, thread_key: str | None = None, owner: str | None = None,
        title: str | None = None, tenant: str | None = None,
    ) -> RunResult:
        """Start a run and drive it to the end (or to an approval wait); return its ``RunResult``."""
        client = self.app.agents[self.agent.name]
        handle = client.run(input=input, thread_key=thread_key, owner=owner, title=title, tenant=tenant)
        return self.result(handle.id)

    def result(self, run_id: str) -> RunResult:
        """The run's current ``RunResult`` (also for runs still waiting)."""
        from lunora_jobs.runtime.result import run_result

        run = self.store.get_run(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r}")
        return run_result(run, self.agent)

    def resolve(self, key: str, tool_call_id: str, *, approve: bool, reason: str | None = None) -> str:
        """Approve or reject a pending tool call on thread ``key`` (drives the run on inline)."""
        return self.app.approvals.resolve(key, tool_call_id, approve=approve, reason=reason, trusted=True)

    def messages(self, key: str) -> list[MessageRecord]:
        """The thread's transcript (records with ``.role``, ``.content``, ...), no owner gate."""
        return self.app.threads.messages(key, trusted=True)

    def thread(self, key: str) -> ThreadRecord:
        """The persisted thread record (status, state, token totals)."""
        return self.app.threads.get(key, trusted=True)

    def steps(self, run_id: str) -> list[StepRecord]:
        """The run's step ledger."""
        return self.store.list_steps(run_id)

    @property
    def dispatched(self) -> list[StepTask]:
        """Every step task the engine dispatched, in order."""
        return list(self.dispatcher.dispatched)


def _backoff_sleep(store: AgentStore) -> Callable[[float], None]:
    """How the harness waits out a retry's backoff: on a store driven by a ``FakeClock``, by moving that
    clock (the ledger holds the step until its ``retry_at`` on the store's clock), else for real."""
    clock = getattr(store, "clock", None)
    if isinstance(clock, FakeClock):
        return lambda seconds: clock.advance(int(seconds * 1000) + 1)
    return time.sleep


def agent_harness(
    agent: AgentDefinition,
    script: Sequence[ModelTurn] = (),
    functions: Mapping[str, Callable[..., Any]] | None = None,
    store: AgentStore | None = None,
    *,
    model: Model | None = None,
    lock: RunLock | None = None,
    dispatcher: InProcessDispatcher | None = None,
    quotas: Sequence[Quota] = (),
) -> Harness:
    """A ``Harness`` for ``agent``: ``script`` is consumed one turn per model call (``model`` replaces
    it), ``functions`` stubs back ``ctx.run`` paths, ``store`` defaults to a fresh ``InMemoryStore``;
    ``lock`` (e.g. a ``RedisLock``) and ``dispatcher`` (an ``InProcessDispatcher`` subclass that drops
    or reorders tasks, for chaos tests) replace the local defaults; ``quotas`` as ``Lunora(quotas=)``."""
    return Harness(
        agent, model or ScriptedModel(script), functions=functions,
        store=store if store is not None else InMemoryStore(), lock=lock, dispatcher=dispatcher,
        quotas=quotas,
    )
