"""browser_tool through Debian's Chromium: every request the page makes passes the SSRF guard.

Two loopback servers: an allowlisted site (its page loads subresources from, fetches from and
redirects to the target) and a target that counts every hit. No request ever reaches the target,
and nothing else leaves: the test's resolver knows only loopback names, and Chromium itself resolves
nothing (every request is answered by the interception layer, which connects to the checked address).
"""

from __future__ import annotations

import base64
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from suite_settings import require_module, service_unavailable

from lunora_jobs import browser_tool, define_agent
from lunora_jobs.errors import ToolError
from lunora_jobs.testing import agent_harness, final_turn, tool_call_turn
from lunora_jobs.tools import ToolContext

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
CTX = ToolContext(idempotency_key="tool:browser:c1", run_id="r1", thread_key="t1", owner=None,
                  tool_call_id="c1")


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


@pytest.fixture
def servers() -> Iterator[dict[str, Any]]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        service_unavailable("Debian's chromium is not installed (apt-get install chromium)")
    require_module("playwright.sync_api")
    hits: list[str] = []

    class Target(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secret")

        do_POST = do_GET

    target, target_port = _serve(Target)
    forms = [f"http://127.0.0.1:{target_port}/", f"http://2130706433:{target_port}/",
             f"http://0x7f000001:{target_port}/", f"http://localhost:{target_port}/"]

    class Site(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            if self.path == "/go":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{target_port}/after-redirect")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            subresources = "".join(f'<img src="{u}img{i}">' for i, u in enumerate(forms))
            script = "".join(f'fetch("{u}api").catch(() => 0);' for u in forms)
            body = (f"<html><body><h1>Welcome</h1><p class='n'>one</p><p class='n'>two</p>{subresources}"
                    f"<script>{script} new Image().src = 'http://[::1]:{target_port}/beacon';</script>"
                    "</body></html>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    site, site_port = _serve(Site)
    try:
        yield {"hits": hits, "forms": forms, "site": f"http://127.0.0.1:{site_port}",
               "allow": [f"127.0.0.1:{site_port}"], "target_port": target_port}
    finally:
        for server in (site, target):
            server.shutdown()
            server.server_close()


def test_loopback_forms_are_refused_before_chromium_starts(servers: dict[str, Any]) -> None:
    tool = browser_tool(allow=servers["allow"])
    for url in [*servers["forms"], f"http://[::1]:{servers['target_port']}/",
                f"http://[::ffff:127.0.0.1]:{servers['target_port']}/"]:
        with pytest.raises(ToolError, match="refused"):
            tool.execute({"op": "content", "url": url}, CTX)
    assert servers["hits"] == []


def test_an_allowlisted_page_loads_but_none_of_its_requests_reach_the_target(servers: dict[str, Any]) -> None:
    tool = browser_tool(allow=servers["allow"], timeout_s=20)
    page = tool.execute({"op": "content", "url": servers["site"] + "/"}, CTX)
    assert page["status"] == 200 and "<h1>Welcome</h1>" in page["html"]
    assert len(page["blocked"]) >= 4 and all("loopback" in b for b in page["blocked"])
    scraped = tool.execute({"op": "scrape", "url": servers["site"] + "/", "selector": "p.n"}, CTX)
    assert scraped["texts"] == ["one", "two"]
    assert servers["hits"] == []


def test_a_redirect_from_the_allowlisted_host_to_another_loopback_port_is_refused(
    servers: dict[str, Any],
) -> None:
    tool = browser_tool(allow=servers["allow"], timeout_s=20)
    with pytest.raises(ToolError) as err:
        tool.execute({"op": "content", "url": servers["site"] + "/go"}, CTX)
    assert "after-redirect" in str(err.value) and "loopback" in str(err.value)
    assert servers["hits"] == []


def test_screenshot_and_pdf(servers: dict[str, Any]) -> None:
    tool = browser_tool(allow=servers["allow"], timeout_s=20)
    shot = tool.execute({"op": "screenshot", "url": servers["site"] + "/"}, CTX)
    assert base64.b64decode(shot["png_base64"]).startswith(b"\x89PNG")
    pdf = tool.execute({"op": "pdf", "url": servers["site"] + "/"}, CTX)
    assert base64.b64decode(pdf["pdf_base64"]).startswith(b"%PDF")
    assert servers["hits"] == []


def test_a_name_is_resolved_once_by_the_guard_and_chromium_resolves_nothing(servers: dict[str, Any]) -> None:
    site_port = servers["site"].rsplit(":", 1)[1]
    lookups: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        lookups.append(host)
        if host == "docs.internal":
            return ["127.0.0.1"]
        raise OSError(f"unknown host {host}")

    tool = browser_tool(allow=[f"docs.internal:{site_port}"], resolver=resolver, timeout_s=20)
    agent = define_agent(name="reader", model="offline", tools=[tool])
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "browser", {"op": "scrape", "url": f"http://docs.internal:{site_port}/",
                                             "selector": "h1"}),
        final_turn("read it"),
    ])
    assert harness.run(input="read the docs", thread_key="web-1").text == "read it"
    [tool_msg] = [m for m in harness.messages("web-1") if m.role == "tool"]
    assert '"texts": ["Welcome"]' in tool_msg.content
    assert "docs.internal" in lookups and servers["hits"] == []
