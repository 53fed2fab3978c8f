"""The JavaScript client's chat state (``createAgentChat``) in headless Chromium: streamed deltas build
``streamingText``; a newer generation starts over, an older one is dropped, a repeated piece adds
nothing, a late joiner's gap is marked; the turn's message replaces the draft."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lunora_jobs.api

pytestmark = [pytest.mark.integration]

SOURCE = (Path(lunora_jobs.api.__file__).parent / "static" / "lunora.js").read_text(encoding="utf-8")

DRIVE = """
async (source) => {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const { createAgentChat } = await import(url);
  let emit = null;
  const client = { subscribe(key, { onEvent }) { emit = onEvent; return { close() {} }; } };
  const chat = createAgentChat({ client, agent: "writer", threadKey: "t" });
  chat.subscribe(() => {});
  const seen = [];
  const delta = (run, turn, generation, offset, text) =>
    ({ type: "delta", id: null, data: { run_id: run, turn, attempt: generation, generation, offset, text } });
  const events = [
    delta("r1", 0, 1, 0, "Hel"), delta("r1", 0, 1, 3, "lo"),   // "Hello"
    delta("r1", 0, 1, 3, "lo"),                                // a repeat (reconnect): nothing new
    delta("r1", 0, 2, 0, "Hi "),                               // a retry: starts over
    delta("r1", 0, 1, 5, " stale"),                            // the killed attempt: dropped
    delta("r1", 0, 2, 3, "there"),                             // "Hi there"
    { type: "message", id: 2, data: { seq: 2, role: "assistant", run_id: "r1", content: "Hi there",
                                      metadata: { turn: 0 } } },
    delta("r2", 0, 1, 10, "tail"),                             // joined late: the gap is marked
  ];
  for (const event of events) { emit(event); seen.push(chat.getSnapshot().streamingText); }
  return { seen, messages: chat.getSnapshot().messages.map((m) => m.content) };
}
"""


def test_chat_state_applies_deltas_with_generation_and_offset(browser: Any) -> None:
    page = browser.new_page()
    page.goto("about:blank")
    result = page.evaluate(DRIVE, SOURCE)
    assert result["seen"] == ["Hel", "Hello", "Hello", "Hi ", "Hi ", "Hi there", "", "… tail"]
    assert result["messages"] == ["Hi there"]
