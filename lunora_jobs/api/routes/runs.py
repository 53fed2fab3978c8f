"""Runs: start (or continue a thread), status, cancel, retry."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, status

from lunora_jobs.api.access import can_see, visible_run, visible_thread
from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.problems import ProblemError, problem_responses
from lunora_jobs.api.runs_page import Cursor, Filter, RunStatus, list_runs
from lunora_jobs.api.schemas import (
    CancelOut,
    Key,
    RetryOut,
    RunAccepted,
    RunOut,
    RunPage,
    RunStart,
    ThreadRunStart,
    TimelineOut,
)
from lunora_jobs.api.timeline import step_view
from lunora_jobs.api.views import run_view
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.records import RunRecord

_IDEMPOTENCY = uuid.UUID("6f1c2a7e-9a53-4c55-9d0e-3b7f0d1e2a41")

RunId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=255, pattern=r"^[\x21-\x7e]+$",
           description="Repeating a start with the same key returns the first run instead of a new one."),
]


def start_run(ctx: ApiContext, who: Identity, *, agent: str, input: Any, thread_key: str | None,
              title: str | None, idempotency_key: str | None) -> RunAccepted:
    """Start a run as ``who`` (the owner is the verified subject, never a body field)."""
    lunora = ctx.lunora
    if agent not in lunora.agents:
        raise ProblemError(422, "unknown-agent", f"no agent named {agent!r}; GET /agents lists them.")
    if input is None:  # the engine refuses it too (RunInputError); here it is the caller's 422
        raise ProblemError(422, "invalid-input", "input is null; send the user message as input.")
    owner = who.subject
    if thread_key is not None:
        existing = ctx.store.get_thread(thread_key)
        if existing is not None:
            visible_thread(ctx.store, thread_key, who)
            if existing.owner is not None:
                owner = existing.owner  # an admin continuing a thread acts on its owner's behalf
    run_id = None
    if idempotency_key is not None:
        # Namespaced by the subject: one caller's key can never name (or reveal) another's run.
        run_id = uuid.uuid5(_IDEMPOTENCY, f"{who.subject}\n{idempotency_key}").hex
        earlier = ctx.store.get_run(run_id)
        if earlier is not None:
            thread = ctx.store.get_thread_by_id(earlier.thread_id)
            return RunAccepted(id=earlier.id, thread_key=thread.key if thread else "", status=earlier.status)
    try:
        handle = lunora.agents[agent].run(input=input, thread_key=thread_key, owner=owner, title=title,
                                          run_id=run_id, tenant=who.tenant)
    except ConflictError:
        if thread_key is not None:
            # Another owner created the thread between our check and our start: it must look missing.
            current = ctx.store.get_thread(thread_key)
            if current is not None and not can_see(current.owner, who):
                raise NotFoundError(f"no thread {thread_key!r}") from None
        raise
    run = ctx.store.get_run(handle.id)
    return RunAccepted(id=handle.id, thread_key=handle.thread_key, status=run.status if run else "queued")


def router(ctx: ApiContext) -> APIRouter:
    """The runs routes."""
    api = APIRouter(tags=["runs"])
    identity = Depends(ctx.gate)

    @api.post("/runs", status_code=status.HTTP_202_ACCEPTED, response_model=RunAccepted,
              responses=problem_responses(404, 409, 429, 503))
    def create_run(body: RunStart, idempotency_key: IdempotencyKey = None,
                   who: Identity = identity) -> RunAccepted:
        """Start a run of an agent; with ``thread_key``, continue that thread's conversation."""
        return start_run(ctx, who, agent=body.agent, input=body.input, thread_key=body.thread_key,
                         title=body.title, idempotency_key=idempotency_key)

    @api.post("/threads/{key}/runs", status_code=status.HTTP_202_ACCEPTED, response_model=RunAccepted,
              responses=problem_responses(404, 409, 429, 503))
    def create_thread_run(key: Annotated[Key, Path()], body: ThreadRunStart,
                          idempotency_key: IdempotencyKey = None, who: Identity = identity) -> RunAccepted:
        """Start (or continue) the conversation on thread ``key``."""
        return start_run(ctx, who, agent=body.agent, input=body.input, thread_key=key, title=body.title,
                         idempotency_key=idempotency_key)

    @api.get("/runs", response_model=RunPage)
    def get_runs(
        status: RunStatus = None, agent: Filter = None, thread_key: Filter = None,
        owner: Annotated[Filter, Query(description="Admins only: one owner's runs.")] = None,
        cursor: Cursor = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        who: Identity = identity,
    ) -> RunPage:
        """Runs newest first (yours; an admin's view holds everyone's), filtered, keyset-paged."""
        return list_runs(ctx, who, status=status, agent=agent, thread_key=thread_key, owner=owner,
                         cursor=cursor, limit=limit)

    @api.get("/runs/{run_id}/steps", response_model=TimelineOut, responses=problem_responses(404))
    def get_timeline(run_id: RunId, who: Identity = identity) -> TimelineOut:
        """The run's step ledger in order: each step's kind, attempt, timing and result or error."""
        run = visible_run(ctx.store, run_id, who)
        thread = ctx.store.get_thread_by_id(run.thread_id)
        return TimelineOut(run=run_view(run, thread.key if thread else ""),
                           steps=[step_view(s) for s in ctx.store.list_steps(run.id)])

    @api.get("/runs/{run_id}", response_model=RunOut, responses=problem_responses(404))
    def get_run(run_id: RunId, who: Identity = identity) -> RunOut:
        """The run's status, usage and — once over — its result."""
        run = visible_run(ctx.store, run_id, who)
        thread = ctx.store.get_thread_by_id(run.thread_id)
        return run_view(run, thread.key if thread else "")

    @api.post("/runs/{run_id}/cancel", response_model=CancelOut, responses=problem_responses(404, 409))
    def cancel_run(run_id: RunId, who: Identity = identity) -> CancelOut:
        """Cancel the run (its thread becomes ``cancelled``); ``cancelled`` is False if it had ended."""
        run = _registered(visible_run(ctx.store, run_id, who))
        cancelled = ctx.lunora.agents[run.agent].cancel(run.id)
        current = ctx.store.get_run(run.id) or run
        return CancelOut(cancelled=cancelled, status=current.status)

    @api.post("/runs/{run_id}/retry", response_model=RetryOut, responses=problem_responses(404, 409))
    def retry_run(run_id: RunId, who: Identity = identity) -> RetryOut:
        """Resume a failed run from the step it failed at (completed steps are not run again); 409
        when the run is not failed or its thread has another run in flight."""
        run = _registered(visible_run(ctx.store, run_id, who))
        steps = ctx.lunora.runs.retry(run.id, trusted=True)  # visible_run was the owner gate
        current = ctx.store.get_run(run.id) or run
        return RetryOut(status=current.status, steps=steps)

    def _registered(run: RunRecord) -> RunRecord:
        if run.agent not in ctx.lunora.agents:
            raise ProblemError(409, "agent-not-registered",
                               f"agent {run.agent!r} is not registered in this API process; "
                               "load the same LUNORA_APP as the workers.")
        return run

    return api
