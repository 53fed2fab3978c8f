"""Token streaming: a turn of a streaming model publishes its text as coalesced deltas on the thread's
bus while it runs; the deltas join to exactly the persisted message; non-streaming models and
``LUNORA_STREAM_DELTAS=false`` publish none; a replay publishes none."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from polling import wait_for

from lunora_jobs import Lunora, define_agent
from lunora_jobs.config import Settings
from lunora_jobs.engine.deltas import TurnDeltas
from lunora_jobs.engine.events import LocalEventBus
from lunora_jobs.models.base import ModelTurn, ToolSpec
from lunora_jobs.models.streaming import TextDelta, TurnDone, turn_events

TEXT = "Streaming arrives in pieces, and the pieces join to the stored answer exactly."


class SlowWords:
    """A streaming model whose clock advances 30 ms per word (so coalescing has something to do)."""

    name = "slow-words"

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def generate(self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
                 tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None) -> ModelTurn:
        return ModelTurn(text=TEXT)

    def stream(self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
               tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None) -> Iterator[Any]:
        for event in turn_events(self.generate(messages), by_word=True):
            if isinstance(event, TextDelta):
                self.clock[0] += 0.03
            yield event

    def astream(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - the engine streams sync
        raise NotImplementedError


def _app(tmp_path: Path, model: Any, **settings: Any) -> tuple[Lunora, list[dict[str, Any]]]:
    agent = define_agent(name="talker", instructions="Talk.", model=model)
    app = Lunora(agents=[agent], database_url=f"sqlite:///{tmp_path}/d.db",
                 settings=Settings(**settings))
    app.store.ensure_tables()
    deltas: list[dict[str, Any]] = []
    app.events.subscribe(lambda e: deltas.append(e) if e["type"] == "delta" else None)
    return app, deltas


def test_the_offline_model_streams_deltas_that_join_to_the_message(tmp_path: Path) -> None:
    app, deltas = _app(tmp_path, "offline")
    handle = app.agents.talker.run(input="hello there", thread_key="t-d")
    result = app.agents.talker.result(handle.id)
    assert result is not None and result.status == "completed"
    assert deltas, "a streaming model's turn publishes deltas"
    assert "".join(d["text"] for d in deltas) == result.text
    starts = [sum(len(x["text"]) for x in deltas[:i]) for i in range(len(deltas))]
    assert [d["offset"] for d in deltas] == starts
    assert {(d["run_id"], d["turn"], d["attempt"], d["generation"], d["thread_key"]) for d in deltas} == {
        (handle.id, 0, 1, 1, "t-d")}
    # Replaying the finished turn runs no model: nothing more is streamed.
    before = len(deltas)
    assert app.execute_step(handle.id, "llm:turn:0").status == "replayed"
    assert len(deltas) == before
    app.close()


def test_deltas_are_off_with_the_setting(tmp_path: Path) -> None:
    app, deltas = _app(tmp_path, "offline", stream_deltas=False)
    handle = app.agents.talker.run(input="hi", thread_key="t-off")
    assert app.agents.talker.result(handle.id).status == "completed"  # type: ignore[union-attr]
    assert deltas == []
    app.close()


def test_a_model_that_cannot_stream_is_called_once_and_streams_nothing(tmp_path: Path) -> None:
    class Plain:
        name = "plain"

        def generate(self, messages: Any, **kwargs: Any) -> ModelTurn:
            return ModelTurn(text="whole")

    app, deltas = _app(tmp_path, Plain())
    handle = app.agents.talker.run(input="hi", thread_key="t-plain")
    assert app.agents.talker.result(handle.id).text == "whole"  # type: ignore[union-attr]
    assert deltas == []
    app.close()


def test_pieces_are_coalesced_at_most_one_publish_per_interval() -> None:
    clock = [0.0]
    bus = LocalEventBus()
    seen: list[dict[str, Any]] = []
    bus.subscribe(seen.append)
    deltas = TurnDeltas(bus, "t", run_id="r", turn=2, attempt=1, generation=3, clock=lambda: clock[0])
    model = SlowWords(clock)
    for event in model.stream([]):
        if isinstance(event, TextDelta):
            deltas.text(event.text)
        assert not isinstance(event, TurnDone) or event.turn.text == TEXT
    deltas.close()
    words = len(TEXT.split())
    assert "".join(e["text"] for e in seen) == TEXT
    assert len(seen) == deltas.published
    assert words // 3 <= len(seen) <= words // 2 + 1  # 30 ms per word, one publish per 50 ms: ~every 2nd
    assert seen[0]["text"] == TEXT.split()[0] + " "  # the first piece at once
    assert {(e["turn"], e["generation"]) for e in seen} == {(2, 3)}


def test_an_empty_piece_publishes_nothing() -> None:
    bus = LocalEventBus()
    deltas = TurnDeltas(bus, "t", run_id="r", turn=0, attempt=1, generation=1)
    deltas.text("")
    deltas.close()
    assert bus.published == 0


def test_a_piece_held_back_is_published_when_the_model_pauses() -> None:
    # A model that sends two pieces back to back, then thinks: the second piece must not wait for
    # the model's next piece (or the end of the turn) to reach a watcher.
    bus = LocalEventBus()
    seen: list[dict[str, Any]] = []
    bus.subscribe(seen.append)
    deltas = TurnDeltas(bus, "t", run_id="r", turn=0, attempt=1, generation=1, interval_s=0.05)
    deltas.text("Dura")
    deltas.text("ble ")  # within the interval: held back, then published by the timer
    wait_for("the held piece to be published", lambda: len(seen) == 2, timeout=10)
    deltas.close()  # nothing left to publish
    assert [(e["offset"], e["text"]) for e in seen] == [(0, "Dura"), (4, "ble ")]
    assert deltas.published == 2
