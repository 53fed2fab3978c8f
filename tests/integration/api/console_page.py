"""Opening the console in a browser page, signed in, with every script error, CSP refusal and 5xx
collected (the signed-out page's expected 401 from ``GET /session`` does not count)."""

from __future__ import annotations

from typing import Any


def signed_in_console(browser: Any, url: str, token: str, subject: str) -> tuple[Any, list[str]]:
    """A page on ``url/console`` signed in with ``token`` as ``subject``, and the problems it collects."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    page.set_default_timeout(60_000)
    page.goto(f"{url}/console")
    page.get_by_test_id("token").fill(token)
    page.get_by_test_id("sign-in-button").click()
    page.get_by_test_id("who").filter(has_text=f"signed in as {subject}").wait_for()
    return page, problems
