"""The store's fused calls — a step's reads riding in its claim's or completion's round trip — where
the store has them, the plain calls where it does not. The step kinds call these in the claim stage,
the complete stage calls ``complete_and_read_ledger``.

- Before the claim, a tool step needs the run and the memo of the turn that made its call (the
  run's latest turn): ``SqlStore.get_run_with_latest_turn`` returns both in one query.
- A turn's claim and its read of the thread history: ``SqlStore.claim_step_and_load_thread``
  pipelines them.
- A turn's run read, claim and history read: ``SqlStore.read_run_and_claim_turn`` pipelines all
  three (the claim conditioned in SQL on the checks the engine makes on the run), when every
  registered agent shares one lease and ``max_attempts`` (the claim needs them before the run says
  which agent it is). Otherwise, or when that claim is not taken, the steps below.
- A tool step's run + turn memo read and claim: ``SqlStore.read_run_and_claim_tool`` (same rule).
- After its completion, a tool step reads the run's ledger (the fan-in):
  ``SqlStore.complete_step_and_list_steps`` pipelines the read behind the completion.

Any other ``AgentStore`` is asked the plain way, one call per read.
"""

from __future__ import annotations

from types import EllipsisType

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.steps import TOOL_PREFIX
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import MessageRecord, RunRecord, StepClaim, StepCompletion, StepRecord


def read_run(
    store: AgentStore, run_id: str, step: str
) -> tuple[RunRecord | None, StepRecord | EllipsisType | None]:
    """The run, and for a tool step the ledger row of the run's latest turn (None: no such row).

    The second value is ``...`` (not read) for other steps and for stores without the joined read;
    the tool kind reads it itself then.
    """
    if not step.startswith(TOOL_PREFIX):
        return store.get_run(run_id), ...
    joined = getattr(store, "get_run_with_latest_turn", None)
    if callable(joined):
        run, latest = joined(run_id)
        return run, latest
    return store.get_run(run_id), ...


def complete_and_read_ledger(
    store: AgentStore, run_id: str, name: str, generation: int, completion: StepCompletion,
    names: list[str] | None = None,
) -> tuple[bool, list[StepRecord] | None]:
    """``complete_step``, then — if it landed — the run's ledger for the fan-in.

    A store with ``complete_step_and_list_steps`` (``SqlStore``: one pipelined round trip on
    PostgreSQL) reads the ledger after the completion in the same round trip; otherwise the ledger
    is read with a plain call (None). ``names``: the rows the fan-in needs (``memo.fan_in_names``;
    None: the whole ledger), so a long run's fan-in does not re-read every earlier turn's memo.
    """
    fused = getattr(store, "complete_step_and_list_steps", None)
    if callable(fused):
        done, ledger = fused(run_id, name, generation, completion, names=names)
        return bool(done), list(ledger)
    return store.complete_step(run_id, name, generation, completion), None


def claim_with_history(
    store: AgentStore, run: RunRecord, step: str, *, owner: str, lease_ms: int, max_attempts: int
) -> tuple[StepClaim, list[MessageRecord] | None]:
    """A turn's claim and, when it claimed, the thread history its prompt is built from.

    ``SqlStore.claim_step_and_load_thread`` pipelines both in one round trip on PostgreSQL; with
    another store the history is None and the turn kind reads it itself.
    """
    fused = getattr(store, "claim_step_and_load_thread", None)
    if callable(fused):
        claim, history = fused(run.id, step, run.thread_id, owner=owner, lease_ms=lease_ms,
                               max_attempts=max_attempts)
        return claim, history
    return store.claim_step(run.id, step, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts), None


def read_run_and_claim_turn(
    deps: EngineDeps, run_id: str, step: str, turn: int
) -> tuple[RunRecord | None, StepClaim | None, list[MessageRecord] | None] | None:
    """The run, the turn's claim (None: not taken) and its history, in one round trip; or None when
    the store cannot fuse them or the agents differ in lease / ``max_attempts`` (read the plain way)."""
    fused = getattr(deps.store, "read_run_and_claim_turn", None)
    shape = _claim_shape(deps)
    if not callable(fused) or shape is None:
        return None
    run, claim, history = fused(run_id, step, turn, agents=list(deps.agents), owner=deps.worker_id,
                                lease_ms=shape[0], max_attempts=shape[1])
    return run, claim, history


def read_run_and_claim_tool(
    deps: EngineDeps, run_id: str, step: str, call_id: str
) -> tuple[RunRecord | None, StepRecord | None, StepClaim | None] | None:
    """The run, its latest turn's row and the tool step's claim (None: not taken), in one round
    trip; or None when the store cannot fuse them or the agents differ in lease / attempts."""
    fused = getattr(deps.store, "read_run_and_claim_tool", None)
    shape = _claim_shape(deps)
    if not callable(fused) or shape is None:
        return None
    run, latest, claim = fused(run_id, step, call_id, agents=list(deps.agents), owner=deps.worker_id,
                               lease_ms=shape[0], max_attempts=shape[1])
    return run, latest, claim


def _claim_shape(deps: EngineDeps) -> tuple[int, int] | None:
    """The (lease ms, max_attempts) every registered agent shares, or None: a claim made before the
    run is read must not depend on which agent the run belongs to."""
    shapes = {(deps.lease_ms(agent), agent.max_attempts) for agent in deps.agents.values()}
    return next(iter(shapes)) if len(shapes) == 1 else None
