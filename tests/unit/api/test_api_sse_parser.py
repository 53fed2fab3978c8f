"""The client's Server-Sent Events parser follows the event-stream rules the API relies on."""

from __future__ import annotations

from lunora_jobs.client import SseEvent, SseParser


def feed(parser: SseParser, text: str) -> list[SseEvent]:
    out = []
    for line in text.split("\n"):
        event = parser.feed(line)
        if event is not None:
            out.append(event)
    return out


def test_events_ids_comments_and_retry() -> None:
    parser = SseParser()
    stream = (": lunora thread stream\nretry: 1000\n\nevent: message\ndata: {\"seq\": 1}\nid: 1\n\n"
              ": ping\n\nevent: status\ndata: {\"status\": \"running\"}\n\ndata: a\ndata: b\n\n")
    assert feed(parser, stream) == [
        SseEvent("message", '{"seq": 1}', "1"), SseEvent("status", '{"status": "running"}', None),
        SseEvent("message", "a\nb", None),
    ]
    assert parser.retry_ms == 1000
    assert parser.last_event_id == "1"  # events without an id keep the last one


def test_a_field_without_space_and_an_event_without_data() -> None:
    parser = SseParser()
    assert feed(parser, "event:delta\ndata:x\n\nevent: lonely\n\n") == [SseEvent("delta", "x", None)]
