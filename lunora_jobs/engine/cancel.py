"""Cancellation: ``cancel_run`` stops a run at its next step boundary.

The run's status moves to ``cancelled`` by a compare-and-set from an open status, so a cancel racing
the run's own end decides exactly one outcome (cancelling a finished run is a no-op that returns
False). From then on:

- the engine refuses every later step of the run (it reads the status before claiming);
- a step already executing finishes its work, but ``complete_step`` refuses its result — the store
  checks the run's status inside the completion's transaction, under the run's row lock — so no
  message, usage or state of it lands after the cancel;
- queued broker tasks of the run are revoked (best-effort: the ledger is the authority);
- the thread moves to ``cancelled`` and is freed in the same statement as the run, and the next
  queued run (if any) starts;
- the child runs it waits on (``agent_as_tool``, ``children.py``) are cancelled with it.
"""

from __future__ import annotations

from lunora_jobs.engine.children import waited_children
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import OPEN, run_ended
from lunora_jobs.errors import NotFoundError


def cancel_run(deps: EngineDeps, run_id: str, *, promote: bool = True) -> bool:
    """Cancel ``run_id``; False when it had already ended. ``NotFoundError`` for an unknown run.

    ``promote=False`` leaves the thread's queue alone (``"replace"`` takes the thread itself).
    """
    store = deps.store
    run = store.get_run(run_id)
    if run is None:
        raise NotFoundError(f"no run {run_id!r}")
    # Only this run's end can take the slot from it, so whether it holds the thread is known now.
    thread = store.get_thread_by_id(run.thread_id)
    if not store.transition_run_and_thread(run_id, OPEN, thread_status="cancelled", release=True,
                                           status="cancelled", stopped="cancelled"):
        return False
    deps.dispatcher.revoke(run_id)
    for child in waited_children(store, run_id):  # agent_as_tool: the children go with their parent
        cancel_run(deps, child)
    if run.status == "queued":
        store.dequeue_run(run.thread_id, run_id)
    if thread is not None and thread.active_run_id == run_id:
        if promote:
            run_ended(deps, run, "cancelled")
        else:
            deps.events.publish(thread.key, {"type": "status", "status": "cancelled", "run_id": run_id})
    return True


def release_if_cancelled(deps: EngineDeps, run_id: str, name: str, generation: int) -> bool:
    """After ``complete_step`` refused a result: if that is because the run was cancelled, close the
    step (failed, lease released) so the ledger shows nothing left running. True if it did."""
    run = deps.store.get_run(run_id)
    if run is None or run.status != "cancelled":
        return False  # fenced out by a takeover: the new lease holder owns the step now
    return deps.store.fail_step(run_id, name, generation, "run cancelled: result not applied", terminal=True)
