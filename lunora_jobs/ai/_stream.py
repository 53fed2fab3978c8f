"""A helper's stream: read once, with ``for`` or ``async for``, then its result.

The stream starts the model call on first read. Breaking out of a loop leaves it where it stopped;
``result()`` (or ``await aresult()``) reads whatever is left and returns the finished result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Generic, Protocol, TypeVar

from lunora_jobs.errors import StreamStateError
from lunora_jobs.models.base import Usage
from lunora_jobs.models.streaming import StreamEvent


class _Finished(Protocol):
    @property
    def usage(self) -> Usage: ...

    @property
    def finish_reason(self) -> str: ...


R = TypeVar("R", bound=_Finished)


class HelperStream(Generic[R]):
    """Model events from a sync or an async source, and the result built once they end."""

    def __init__(
        self,
        sync_events: Callable[[], Iterator[StreamEvent]],
        async_events: Callable[[], AsyncIterator[StreamEvent]],
        finish: Callable[[], R],
    ) -> None:
        self._sync_events = sync_events
        self._async_events = async_events
        self._finish = finish
        self._iterator: Iterator[StreamEvent] | None = None
        self._async_iterator: AsyncIterator[StreamEvent] | None = None
        self._result: R | None = None
        self._done = False

    def events(self) -> Iterator[StreamEvent]:
        """Every model event: text and tool-call deltas, and a ``TurnDone`` per model call."""
        if self._async_iterator is not None:
            raise StreamStateError("This stream is being read with 'async for'; keep reading it that way.")
        if self._iterator is None:
            self._iterator = self._sync_events()
        # A plain loop, not ``yield from``: a caller's ``break`` closes this generator but must leave
        # the source open for ``result()`` to finish reading.
        for event in self._iterator:  # noqa: UP028
            yield event
        self._complete()

    async def aevents(self) -> AsyncIterator[StreamEvent]:
        """``events`` for an event loop."""
        if self._iterator is not None:
            raise StreamStateError("This stream is being read with 'for'; keep reading it that way.")
        if self._async_iterator is None:
            self._async_iterator = self._async_events()
        while True:
            try:
                event = await anext(self._async_iterator)
            except StopAsyncIteration:
                break
            yield event
        self._complete()

    def result(self) -> R:
        """Read the rest of the stream and return its result."""
        for _ in self.events():
            pass
        return self.final()

    async def aresult(self) -> R:
        """Read the rest of the stream without blocking the event loop, and return its result."""
        async for _ in self.aevents():
            pass
        return self.final()

    @property
    def done(self) -> bool:
        """True once the stream has ended."""
        return self._done

    @property
    def usage(self) -> Usage:
        """The usage of every model call the stream made (once it has ended)."""
        return self.final().usage

    @property
    def finish_reason(self) -> str:
        """How the (last) model call ended (once the stream has ended)."""
        return self.final().finish_reason

    def final(self) -> R:
        """The result of a stream that has ended (``StreamStateError`` before that)."""
        if not self._done or self._result is None:
            raise StreamStateError(
                "The stream has not finished: iterate it to the end, or call result() / await aresult()."
            )
        return self._result

    def _complete(self) -> None:
        if not self._done:
            self._result = self._finish()
            self._done = True

