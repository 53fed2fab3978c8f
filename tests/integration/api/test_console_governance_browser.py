"""The console's action proposals, usage and quotas in headless Chromium (Debian's, driven by
Playwright) on the real stack (``lunora api`` + a Celery worker + PostgreSQL + Redis): a run of an
independent-mode agent proposes a charge and finishes; the proposal is approved from the console, a
worker runs it once, and its outcome reaches the thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_stack import TOKENS, ApiStack
from console_page import signed_in_console

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def stack_env() -> dict[str, str]:
    """The stack's app with the ``payer`` agent and quotas (``api_app.build_app``)."""
    return {"API_GOVERNANCE": "1"}


def test_console_shows_usage_quotas_and_decides_a_proposal(
    stack: ApiStack, browser: Any, tmp_path: Path,
) -> None:
    stack.start_worker()
    api = stack.start_api()
    page, problems = signed_in_console(browser, api.url, TOKENS["alice"], "alice")
    page.get_by_test_id("quota").filter(has_text="actor alice (UTC day)").wait_for()

    page.get_by_test_id("start-agent").select_option("payer")
    page.get_by_test_id("start-thread").fill("t-prop")
    page.get_by_test_id("start-input").fill("charge 9000")
    page.get_by_test_id("start-button").click()
    page.get_by_test_id("run-status").filter(has_text="completed").wait_for()
    proposal = page.get_by_test_id("proposal").filter(has_text="charge_card")
    proposal.filter(has_text="pending").wait_for()
    assert stack.redis.llen(f"{stack.prefix}:charges") == 0

    proposal.get_by_test_id("proposal-approve").click()
    page.locator("[data-testid=proposal][data-status=succeeded]").wait_for()
    assert "by alice" in proposal.inner_text()
    page.get_by_test_id("message").filter(has_text="charged 9000").first.wait_for()  # the outcome message
    assert stack.redis.llen(f"{stack.prefix}:charges") == 1

    page.get_by_test_id("usage-row").filter(has_text="payer").wait_for()
    page.get_by_test_id("usage-by").select_option("actor")
    page.get_by_test_id("usage-row").filter(has_text="alice").wait_for()
    assert page.get_by_test_id("usage-row").count() == 1  # alice reads her own usage only

    page.screenshot(path=str(tmp_path / "console-governance.png"), full_page=True)
    assert problems == [], problems
