"""The runs list: keyset pages of the runs an identity may see, with usage and cost per run."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from lunora_jobs.api.access import can_see
from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.costs import run_costs
from lunora_jobs.api.problems import ProblemError
from lunora_jobs.api.schemas import RunPage, RunSummary, UsageOut

RunStatus = Annotated[
    str | None, Query(pattern=r"^(queued|running|awaiting_input|completed|failed|cancelled)$")
]
Filter = Annotated[str | None, Query(min_length=1, max_length=255, pattern=r"^[^\x00]+$")]


CURSOR_PATTERN = r"^[0-9]{1,18}~[A-Za-z0-9_.:-]{1,128}$"
Cursor = Annotated[str | None, Query(pattern=CURSOR_PATTERN,
                                     description="``next_cursor`` of the previous page: a keyset position.")]


def encode_cursor(created_at: int, run_id: str) -> str:
    """The keyset position after a run: ``<created_at>~<run id>`` (what ``next_cursor`` holds)."""
    return f"{created_at}~{run_id}"


def decode_cursor(cursor: str) -> tuple[int, str]:
    """Inverse of ``encode_cursor`` (the route's pattern already checked the form)."""
    created, _, run_id = cursor.partition("~")
    return int(created), run_id


def list_runs(
    ctx: ApiContext, who: Identity, *, status: str | None, agent: str | None, thread_key: str | None,
    owner: str | None, cursor: str | None, limit: int,
) -> RunPage:
    """A page of the runs ``who`` may see: their own, or anyone's for an admin."""
    if owner is not None and owner != who.subject and not who.admin:
        raise ProblemError(403, "forbidden", "only an admin identity may list other owners' runs.")
    thread_id = None
    if thread_key is not None:
        thread = ctx.store.get_thread(thread_key)
        if thread is None or not can_see(thread.owner, who):
            return RunPage(runs=[], next_cursor=None)
        thread_id = thread.id
    rows = ctx.store.page_runs(
        owner=owner if who.admin else who.subject, status=status, agent=agent, thread_id=thread_id,
        before=decode_cursor(cursor) if cursor else None, limit=limit + 1,
    )
    more, rows = len(rows) > limit, rows[:limit]
    costs = run_costs(ctx.store.usage_by_model([r.id for r in rows]), ctx.estimate_cost)
    runs = [RunSummary(
        id=r.id, thread_key=r.thread_key, agent=r.agent, owner=r.owner, status=r.status, stopped=r.stopped,
        turns=r.turns, usage=UsageOut(input_tokens=r.input_tokens, output_tokens=r.output_tokens),
        cost_usd=costs.get(r.id), created_at=r.created_at, updated_at=r.updated_at,
    ) for r in rows]
    last = rows[-1] if rows else None
    return RunPage(runs=runs, next_cursor=encode_cursor(last.created_at, last.id) if more and last else None)
