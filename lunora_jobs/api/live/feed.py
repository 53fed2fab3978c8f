"""One client's live view of a thread — the contract shared by the SSE and WebSocket endpoints.

The transcript comes from the database, never from the notices: on connect the feed sends every
stored message with ``seq > last_event_id`` (the client's ``Last-Event-ID``), and on each notice that
the thread changed (``messages`` after a turn or tool step wrote, ``status``, ...; or every ``poll_s``
of quiet, in case a notice was lost) it sends the messages after the last one sent.
The subscription is confirmed BEFORE the first read, so a message committed after that read is
announced by a notice the feed is sure to get: a reconnect misses nothing and repeats nothing.
A status change is not in the transcript, so after that first read the feed also sends the current
``status`` of the runs behind what the client holds or just received (the message at
``last_event_id`` and the caught-up ones; the newest ``OPENING_RUNS``): a client that was away while
its run ended learns it, instead of waiting for a notice that was sent while it was gone.

Events (``FeedEvent.event``):

- ``message`` (``id`` = the message ``seq``): a persisted message;
- ``snapshot``: on connect — thread status, active run, synced state, pending approvals;
- ``status``: a run's status changed (``run_id``, ``status``), followed by ``approvals``; on connect,
  the current status of the runs behind the caught-up messages, then ``approvals`` (never the same
  status twice in a row for one run; its ``approvals`` still follows);
- ``approvals``: the calls now waiting for a decision;
- ``state``: the synced state changed;
- ``delta``: transient model text while a turn runs (``run_id``, ``turn``, ``attempt``,
  ``generation``, ``offset`` = characters of this attempt before ``text``, ``text``); the turn's
  ``message`` replaces them. Never sent for a turn whose message this feed already sent, nor from a
  generation older than the newest this feed relayed for that turn (a retried turn starts over under
  a higher generation: a client drops what it showed of an older one);
- ``ping``: a heartbeat after ``heartbeat_s`` of silence.

Only ``message`` events carry an id, so ``Last-Event-ID`` is always the last message seq received.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from anyio import to_thread

from lunora_jobs.api.live.hub import LiveHub
from lunora_jobs.api.views import approval_view, message_view
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.records import MessageRecord, ThreadRecord

PAGE = 500
OPENING_RUNS = 8
CATCH_UP = frozenset({"status", "step", "messages", "resync"})
DELTA_FIELDS = ("run_id", "turn", "attempt", "generation", "offset", "text")


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One event of the feed."""

    event: str
    data: Any
    id: int | None = None


class ThreadFeed:
    """Yields ``FeedEvent`` for one thread from ``after_seq`` on, until the client goes away."""

    def __init__(self, lunora: Lunora, hub: LiveHub, thread: ThreadRecord, *, after_seq: int,
                 viewer: str, trusted: bool, heartbeat_s: float, poll_s: float) -> None:
        self._lunora = lunora
        self._hub = hub
        self._thread = thread
        self._cursor = after_seq
        self._viewer = viewer
        self._trusted = trusted
        self._heartbeat_s = heartbeat_s
        self._poll_s = poll_s
        self._answered: set[tuple[str, int]] = set()  # (run_id, turn) whose assistant message was sent
        self._generations: dict[tuple[str, int], int] = {}  # (run_id, turn) -> newest delta generation
        self._statuses: dict[str, str] = {}  # run_id -> the status last sent

    async def events(self) -> AsyncIterator[FeedEvent]:
        """The feed."""
        async with self._hub.subscribe(self._thread.key) as sub:
            yield await self._snapshot()
            resumed_at = self._cursor
            caught_up = await self._catch_up()
            for event in caught_up + await self._opening_statuses(resumed_at, caught_up):
                yield event
            last_read = last_sent = time.monotonic()
            while True:
                wait = max(0.05, min(self._heartbeat_s - (time.monotonic() - last_sent),
                                     self._poll_s - (time.monotonic() - last_read)))
                notice = await sub.get(wait)
                out: list[FeedEvent] = []
                now = time.monotonic()
                kind = None if notice is None else notice.get("type")
                if kind in CATCH_UP or now - last_read >= self._poll_s:
                    out += await self._catch_up()
                    last_read = now
                if notice is not None:
                    out += await self._relay(notice)
                if not out and time.monotonic() - last_sent >= self._heartbeat_s:
                    out.append(FeedEvent("ping", {"t": int(time.time() * 1000)}))
                for event in out:
                    yield event
                if out:
                    last_sent = time.monotonic()

    async def _relay(self, notice: dict[str, Any]) -> list[FeedEvent]:
        kind = notice.get("type")
        if kind == "status":
            run_id, status = notice.get("run_id"), notice.get("status")
            out = [FeedEvent("status", {"run_id": run_id, "status": status})]
            if isinstance(run_id, str) and isinstance(status, str):
                if self._statuses.get(run_id) == status:
                    out = []  # already sent on connect, read after this notice was published
                self._statuses[run_id] = status
            # The approvals are read again either way: the change may have added or settled one.
            return [*out, FeedEvent("approvals", {"pending": await self._run(self._approvals)})]
        if kind == "state":
            return [FeedEvent("state", {"state": notice.get("state")})]
        if kind == "delta":
            return self._delta(notice)
        return []

    def _delta(self, notice: dict[str, Any]) -> list[FeedEvent]:
        # Fencing: nothing for a turn whose message was sent, nothing from an attempt older than the
        # newest one seen (a killed or taken-over attempt's late pieces).
        run_id, turn, generation = str(notice.get("run_id")), notice.get("turn"), notice.get("generation")
        if not isinstance(turn, int) or not isinstance(generation, int) or (run_id, turn) in self._answered:
            return []
        if generation < self._generations.get((run_id, turn), generation):
            return []
        self._generations[(run_id, turn)] = generation
        return [FeedEvent("delta", {k: notice.get(k) for k in DELTA_FIELDS})]

    async def _snapshot(self) -> FeedEvent:
        def read() -> dict[str, Any]:
            thread = self._lunora.store.get_thread_by_id(self._thread.id) or self._thread
            return {"status": thread.status, "active_run_id": thread.active_run_id, "state": thread.state,
                    "pending": self._approvals()}

        return FeedEvent("snapshot", await self._run(read))

    async def _catch_up(self) -> list[FeedEvent]:
        out: list[FeedEvent] = []
        while True:
            page: list[MessageRecord] = await self._run(
                lambda: self._lunora.store.list_messages_after(self._thread.id, self._cursor, PAGE)
            )
            for message in page:
                self._cursor = message.seq
                turn = (message.metadata or {}).get("turn")
                if message.role == "assistant" and message.run_id and isinstance(turn, int):
                    self._answered.add((message.run_id, turn))
                body = message_view(message).model_dump(mode="json")
                out.append(FeedEvent("message", body, id=message.seq))
            if len(page) < PAGE:
                return out

    async def _opening_statuses(self, resumed_at: int, caught_up: list[FeedEvent]) -> list[FeedEvent]:
        def read() -> list[FeedEvent]:
            store = self._lunora.store
            held = store.list_messages_after(self._thread.id, resumed_at - 1, 1) if resumed_at > 0 else []
            runs = [m.run_id for m in held] + [e.data.get("run_id") for e in caught_up]
            newest = list(dict.fromkeys(r for r in reversed(runs) if r))[:OPENING_RUNS]
            out = []
            for run_id in reversed(newest):
                run = store.get_run(run_id)
                if run is not None:
                    self._statuses[run_id] = run.status
                    out.append(FeedEvent("status", {"run_id": run_id, "status": run.status}))
            # Read after the statuses: the snapshot's list may predate a decision they reflect.
            return [*out, FeedEvent("approvals", {"pending": self._approvals()})] if out else out

        result: list[FeedEvent] = await self._run(read)
        return result

    def _approvals(self) -> list[dict[str, Any]]:
        pending = self._lunora.approvals.pending(self._thread.key, viewer=self._viewer, trusted=self._trusted)
        return [approval_view(p).model_dump(mode="json") for p in pending]

    @staticmethod
    async def _run(fn: Callable[[], Any]) -> Any:
        return await to_thread.run_sync(fn)
