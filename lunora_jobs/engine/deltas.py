"""Token streaming of a turn: the model's text deltas, published on the thread's channel as it runs.

While ``llm:turn:<n>`` runs a streaming model, ``TurnDeltas`` publishes ``{"type": "delta", "run_id",
"turn", "attempt", "generation", "offset", "text"}`` on the thread's event bus (``events.EventBus``):
``offset`` is the number of characters of this attempt's text before ``text``, so a watcher that
joined late can tell it missed the start. Pieces are coalesced (at most one publish per
``interval_s``, the first one at once) so a fast model costs a few publishes per second, not one per
token; a piece held back is published once the interval has passed even if the model then pauses
(a timer), so a watcher never waits on a pause to see text the worker already has.

Deltas are transient: nothing is written, and the turn's persisted assistant message replaces them.
They are fenced by the claim's ``generation``: a retried or taken-over turn streams under a higher
one, and a live stream drops deltas of a generation older than the newest it saw, and every delta of
a turn whose message it already sent (``lunora_jobs.api.live.feed``). A replayed turn runs no model,
so it publishes nothing.

Example::

    deltas = TurnDeltas(app.events, "t1", run_id="r1", turn=0, attempt=1, generation=1)
    deltas.text("Hel"); deltas.text("lo")    # one publish now, the rest at the next interval or close
    deltas.close()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from lunora_jobs.engine.events import EventBus

INTERVAL_S = 0.05
"""At most one publish per 50 ms per streaming turn (the first piece goes out at once)."""


class TurnDeltas:
    """Coalesces one turn attempt's text deltas into notices on its thread's channel."""

    def __init__(self, events: EventBus, thread_key: str, *, run_id: str, turn: int, attempt: int,
                 generation: int, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._events = events
        self._thread_key = thread_key
        self._head = {"type": "delta", "run_id": run_id, "turn": turn, "attempt": attempt,
                      "generation": generation}
        self._interval_s = interval_s
        self._clock = clock
        self._pending: list[str] = []
        self._offset = 0  # characters already published
        self._last: float | None = None
        self.published = 0
        # The model's stream and the trailing timer both publish: one at a time, so offsets stay in order.
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def text(self, piece: str) -> None:
        """Add a piece of the turn's text; publish if the interval since the last publish passed,
        else once it has (a timer)."""
        if not piece:
            return
        with self._lock:
            self._pending.append(piece)
            self._publish_or_arm(self._clock())

    def close(self) -> None:
        """Publish what is left (called when the model's stream ended, however it ended)."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._flush(self._clock())

    def _publish_or_arm(self, now: float) -> None:
        if self._last is None or now - self._last >= self._interval_s:
            self._flush(now)
        elif self._timer is None:
            self._timer = threading.Timer(self._interval_s - (now - self._last), self._due)
            self._timer.daemon = True
            self._timer.start()

    def _due(self) -> None:
        with self._lock:
            self._timer = None
            if self._pending and not self._closed:
                self._publish_or_arm(self._clock())  # an injected clock may not have moved yet

    def _flush(self, now: float) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._events.publish(self._thread_key, {**self._head, "offset": self._offset, "text": text})
        self._offset += len(text)
        self._last = now
        self.published += 1
