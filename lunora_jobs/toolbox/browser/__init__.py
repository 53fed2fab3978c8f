"""``browser_tool`` and its SSRF guard (``check_url``)."""

from lunora_jobs.toolbox.browser.guard import Decision, check_url
from lunora_jobs.toolbox.browser.tool import browser_tool

__all__ = ["Decision", "browser_tool", "check_url"]
