"""The console in headless Chromium (Debian's, driven by Playwright): sign in, start a run and watch it
stream in, approve the gated tool, see the tool result, the final answer and the step timeline.

Runs on the real stack: ``lunora api`` (uvicorn) + a Celery worker + PostgreSQL + Redis. Assertions are
on the DOM; a screenshot is saved under the test's tmp dir for a person to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_stack import TOKENS, ApiStack
from console_page import signed_in_console

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_console_watch_approve_and_timeline(stack: ApiStack, browser: Any, tmp_path: Path) -> None:
    stack.start_worker()
    api = stack.start_api()
    page, problems = signed_in_console(browser, api.url, TOKENS["alice"], "alice")

    # Start a run from the console and watch its thread stream in.
    page.get_by_test_id("start-agent").select_option("support")
    page.get_by_test_id("start-thread").fill("t-ui")
    page.get_by_test_id("start-input").fill("charge 9000")
    page.get_by_test_id("start-button").click()
    messages = page.get_by_test_id("message")
    messages.filter(has_text="charge 9000").first.wait_for()
    messages.filter(has_text="charge_card").first.wait_for()  # the assistant's tool call, streamed in
    approval = page.get_by_test_id("approval")
    approval.filter(has_text="charge_card").wait_for()
    page.get_by_test_id("run-status").filter(has_text="awaiting_input").wait_for()
    assert stack.redis.llen(f"{stack.prefix}:charges") == 0

    approval.get_by_test_id("approve").click()
    messages.filter(has_text="charged 9000").first.wait_for()           # the tool result
    messages.filter(has_text="saw: charged 9000").wait_for()             # the final answer
    page.get_by_test_id("run-status").filter(has_text="completed").wait_for()
    page.locator("[data-testid=step][data-step='llm:turn:1'][data-status=completed]").wait_for()
    assert approval.count() == 0

    roles = [m.get_attribute("data-role") for m in messages.all()]
    assert roles == ["user", "assistant", "tool", "assistant"]
    steps = page.get_by_test_id("step")
    names = [s.get_attribute("data-step") for s in steps.all()]
    assert names[0] == "llm:turn:0" and names[-1] == "llm:turn:1"
    assert set(names) == {"llm:turn:0", "approval:charge-9000", "tool:charge_card:charge-9000", "llm:turn:1"}
    assert all(s.get_attribute("data-status") == "completed" for s in steps.all())
    # Measured in one evaluation: the timeline re-renders on each stream event, and a locator's
    # bounding_box() of a bar replaced between its lookup and its measure is None.
    widths = page.eval_on_selector_all("[data-testid=step-bar]",
                                       "bars => bars.map((bar) => bar.getBoundingClientRect().width)")
    assert len(widths) == 4 and all(width > 0 for width in widths), widths
    assert "approved by alice" in page.get_by_test_id("timeline").inner_text()
    row = page.get_by_test_id("run-row").filter(has_text="t-ui")
    row.get_by_test_id("run-row-status").filter(has_text="completed").wait_for()
    assert stack.redis.llen(f"{stack.prefix}:charges") == 1

    # The JS client's chat surface, as an app would use it (the console's cookie session).
    chat = page.evaluate("""async () => {
      const { LunoraClient, createAgentChat } = await import("/client/lunora.js");
      const client = new LunoraClient();
      await client.session();
      const chat = createAgentChat({ client, agent: "support", threadKey: "t-js" });
      const finished = new Promise((resolve) => chat.subscribe((s) => {
        const settled = !s.messages.some((m) => m.pending);
        if (s.status === "completed" && s.messages.length === 2 && settled) resolve(s);
      }));
      await chat.send("hello from js");
      const s = await finished;
      chat.close();
      return { roles: s.messages.map((m) => m.role), contents: s.messages.map((m) => m.content),
               seqs: s.messages.map((m) => m.seq), state: s.state, pending: s.pendingApprovals };
    }""")
    assert chat == {"roles": ["user", "assistant"], "contents": ["hello from js", "answer to hello from js"],
                    "seqs": [1, 2], "state": {"note": None}, "pending": []}
    assert stack.app.store.get_thread("t-js").owner == "alice"

    page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
    assert (tmp_path / "console.png").stat().st_size > 10_000
    assert problems == [], problems  # no script error, no CSP violation
