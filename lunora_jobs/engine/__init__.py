"""The durable loop. It never imports Celery: steps are enqueued through a ``Dispatcher``.

A step's trip (``pipeline/``): claim → work → complete → plan → dispatch, each stage a module it
passes through once, with the pure ``plan.py`` at the centre. What differs between a turn, a tool
call, an approval and a memory step is the step's kind (``kinds/``: one module per kind, one
registration each). Observers hook in around every step and run end (``hooks.py``).

- ``steps``: step names (``llm:turn:<n>``, ``tool:<name>:<call_id>``, ``approval:<call_id>``), message keys;
- ``plan``: pure "what runs next" from ledger facts; ``memo``: what the ledger keeps for a turn;
- ``pipeline``: ``Engine.execute`` and its stages; ``kinds``: turn, tool, approval, memory;
- ``fused``: the store's several-operations-in-one-round-trip calls, where it has them;
- ``start`` / ``admission`` / ``handover`` / ``cancel`` / ``resume``: starting runs, ``on_concurrent_run``,
  handing a thread to the next queued run, cancelling, retrying a failed run from its failed step;
- ``approvals`` / ``sweep``: delivering decisions to waits, recovering stalls;
- ``locks`` / ``keys`` / ``dispatch`` / ``events`` / ``context``: the run lock, Redis keys,
  dispatchers, live updates, dependencies.
"""

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import Dispatcher, InProcessDispatcher, PublishCarrier, StepTask
from lunora_jobs.engine.hooks import HookSet, StepHooks, StepInfo
from lunora_jobs.engine.kinds import StepKind, StepState, Work, register_step_kind
from lunora_jobs.engine.pipeline import Engine, StepOutcome

__all__ = [
    "Dispatcher",
    "Engine",
    "EngineDeps",
    "HookSet",
    "InProcessDispatcher",
    "PublishCarrier",
    "StepHooks",
    "StepInfo",
    "StepKind",
    "StepOutcome",
    "StepState",
    "StepTask",
    "Work",
    "register_step_kind",
]
