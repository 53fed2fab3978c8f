"""Threads: the thread, its messages paged by seq, its synced state, pending approvals and decisions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query

from lunora_jobs.api.access import visible_thread
from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.problems import problem_responses
from lunora_jobs.api.schemas import (
    MAX_KEY,
    MAX_SEQ,
    ApprovalsOut,
    DecisionIn,
    DecisionOut,
    Key,
    MessagePage,
    StateOut,
    ThreadOut,
    is_storable,
)
from lunora_jobs.api.views import approval_view, message_view, thread_view
from lunora_jobs.errors import NotFoundError

ThreadKey = Annotated[Key, Path(description="The thread's key.")]
# Any text: the id is the provider's, so no character set is promised (an id with a space or a '%'
# must stay approvable); an id no call can have (a NUL) is simply not pending — 404, never 422.
CallId = Annotated[str, Path(min_length=1, max_length=MAX_KEY,
                             description="The tool call's id, as the model gave it (percent-encoded).")]


def router(ctx: ApiContext) -> APIRouter:
    """The thread routes."""
    api = APIRouter(tags=["threads"], responses=problem_responses(404))
    identity = Depends(ctx.gate)

    @api.get("/threads/{key}", response_model=ThreadOut)
    def get_thread(key: ThreadKey, who: Identity = identity) -> ThreadOut:
        """The thread: status, active run, synced state, usage."""
        return thread_view(visible_thread(ctx.store, key, who))

    @api.get("/threads/{key}/messages", response_model=MessagePage)
    def get_messages(
        key: ThreadKey,
        after: Annotated[int, Query(ge=0, le=MAX_SEQ, description="Only messages with seq > after.")] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        who: Identity = identity,
    ) -> MessagePage:
        """The transcript, oldest first, paged by ``seq``."""
        thread = visible_thread(ctx.store, key, who)
        page = ctx.store.list_messages_after(thread.id, after, limit + 1)
        more = len(page) > limit
        page = page[:limit]
        return MessagePage(messages=[message_view(m) for m in page],
                           next_after=page[-1].seq if more and page else None)

    @api.get("/threads/{key}/state", response_model=StateOut)
    def get_state(key: ThreadKey, who: Identity = identity) -> StateOut:
        """The thread's synced state (what tools wrote with ``ctx.set_state``)."""
        return StateOut(state=visible_thread(ctx.store, key, who).state)

    @api.get("/threads/{key}/approvals", response_model=ApprovalsOut)
    def get_approvals(key: ThreadKey, who: Identity = identity) -> ApprovalsOut:
        """Tool calls the thread's active run waits on."""
        visible_thread(ctx.store, key, who)
        # The gate ran (visible_thread); an admin reads any thread on its owner's behalf (trusted).
        pending = ctx.lunora.approvals.pending(key, viewer=who.subject, trusted=who.admin)
        return ApprovalsOut(pending=[approval_view(p) for p in pending])

    def decide(key: str, call_id: str, approve: bool, body: DecisionIn | None, who: Identity) -> DecisionOut:
        visible_thread(ctx.store, key, who)
        if not is_storable(call_id):  # never a stored call's id; the database would refuse the lookup
            raise NotFoundError(f"no pending approval {call_id!r} on thread {key!r}")
        result = ctx.lunora.approvals.resolve(
            key, call_id, approve=approve, reason=body.reason if body else None, viewer=who.subject,
            trusted=who.admin,
        )
        return DecisionOut(result="applied" if result == "applied" else "unchanged")

    @api.post("/threads/{key}/approvals/{call_id}/approve", response_model=DecisionOut,
              responses=problem_responses(409))
    def approve(key: ThreadKey, call_id: CallId, body: Annotated[DecisionIn | None, Body()] = None,
                who: Identity = identity) -> DecisionOut:
        """Approve a pending tool call: the tool runs as normal."""
        return decide(key, call_id, True, body, who)

    @api.post("/threads/{key}/approvals/{call_id}/reject", response_model=DecisionOut,
              responses=problem_responses(409))
    def reject(key: ThreadKey, call_id: CallId, body: Annotated[DecisionIn | None, Body()] = None,
               who: Identity = identity) -> DecisionOut:
        """Reject a pending tool call: the model is told (with ``reason``) and recovers."""
        return decide(key, call_id, False, body, who)

    return api
