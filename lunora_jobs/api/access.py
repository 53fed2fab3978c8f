"""Who may see what: the owner gate every route goes through.

A thread or run is visible to its owner and to an admin identity. Everything else — another
owner's thread, a thread without an owner, a thread that does not exist — is the same
``NotFoundError`` with the same text, so probing keys reveals nothing.
"""

from __future__ import annotations

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import RunRecord, ThreadRecord


def can_see(owner: str | None, who: Identity) -> bool:
    """Whether ``who`` may see something owned by ``owner`` (unowned: admins only — fail closed)."""
    return who.admin or (owner is not None and owner == who.subject)


def visible_thread(store: AgentStore, key: str, who: Identity) -> ThreadRecord:
    """The thread ``key`` if ``who`` may see it, else ``NotFoundError("no thread ...")``."""
    thread = store.get_thread(key)
    if thread is None or not can_see(thread.owner, who):
        raise NotFoundError(f"no thread {key!r}")
    return thread


def visible_run(store: AgentStore, run_id: str, who: Identity) -> RunRecord:
    """The run if ``who`` may see it, else ``NotFoundError("no run ...")``."""
    run = store.get_run(run_id)
    if run is None or not can_see(run.owner, who):
        raise NotFoundError(f"no run {run_id!r}")
    return run
