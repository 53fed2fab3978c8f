"""``browser_tool``: ``content / scrape / screenshot / pdf`` of a URL, through Playwright driving the
system's Chromium (``executable_path``; nothing is downloaded).

Every request the page makes (the navigation, subresources, scripts' fetches) is intercepted
(Playwright request routing on the whole context) and passes the SSRF guard; an allowed request is
sent by the interception layer itself to the address the guard checked, its redirects followed there
hop by hop through the guard, and the answer handed to the page, so Chromium never resolves a name
or opens a connection of its own. As a backstop, Chromium is started with every host name mapped to
"not found" and a proxy that does not exist, so anything the routing could not see (a WebSocket)
fails instead of leaving. Service workers are blocked (they could fetch outside the page's routing).
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

from lunora_jobs.errors import BrowserUnavailableError, InvalidToolError, ToolError
from lunora_jobs.toolbox._schema import op_schema
from lunora_jobs.toolbox.browser.guard import Resolver, check_url, system_resolver
from lunora_jobs.toolbox.browser.pinned import fetch_pinned
from lunora_jobs.tools import NeedsApproval, ToolContext, ToolDefinition, define_tool

OPS = ("content", "scrape", "screenshot", "pdf")
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5


def _dead_port() -> int:
    """A loopback port nobody listens on: the backstop proxy (a connection there fails at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def browser_tool(
    *,
    allow: Iterable[str] = (),
    executable_path: str = "/usr/bin/chromium",
    name: str = "browser",
    needs_approval: NeedsApproval = False,
    timeout_s: float = 30.0,
    max_bytes: int = 5_000_000,
    resolver: Resolver = system_resolver,
) -> ToolDefinition:
    """A headless-browser tool. ``allow`` admits ``host`` / ``host:port`` entries the guard would
    refuse (an internal service you mean the agent to read); everything else must be public.

    Needs the ``browser`` extra (``pip install 'lunora-jobs[browser]'``) and a Chromium at
    ``executable_path`` (Debian: ``apt-get install chromium``).

    Example::

        web = browser_tool()
        researcher = define_agent(name="researcher", tools=[web])
    """
    allowed = tuple(allow)
    if isinstance(allow, str):
        raise InvalidToolError("browser_tool: allow= takes a list of hosts, not a str.")

    def check(url: str) -> Any:
        return check_url(url, allow=allowed, resolver=resolver)

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        op, url = input["op"], input["url"]
        decision = check(url)
        if not decision.allowed:
            raise ToolError(f"browser {op} refused {url!r}: {decision.reason}")
        try:
            from playwright.sync_api import Error as PlaywrightError
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise BrowserUnavailableError(
                "browser_tool needs Playwright: pip install 'lunora-jobs[browser]' (and Chromium: "
                "apt-get install chromium)."
            ) from None
        refused: list[str] = []

        def route(route: Any, request: Any) -> None:
            target = request.url
            if target.startswith(("data:", "blob:")):
                route.continue_()  # in-page data: nothing leaves the browser
                return
            method, body = request.method, request.post_data_buffer
            # Chromium does not route the request a fulfilled redirect leads to, so redirects are
            # followed here, each hop through the guard (a hop it refuses ends the request).
            for _ in range(MAX_REDIRECTS + 1):
                verdict = check(target)
                if not verdict.allowed:
                    refused.append(f"{target}: {verdict.reason}")
                    route.abort("blockedbyclient")
                    return
                parts = urlsplit(target)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                try:
                    answer = fetch_pinned(
                        method, parts.scheme, verdict.host, verdict.port, verdict.address, path,
                        dict(request.headers), body, timeout=timeout_s, max_bytes=max_bytes,
                    )
                except (OSError, ValueError) as exc:
                    refused.append(f"{target}: {exc}")
                    route.abort("failed")
                    return
                location = dict((k.lower(), v) for k, v in answer.headers).get("location")
                if answer.status not in REDIRECTS or not location:
                    route.fulfill(status=answer.status, headers=dict(answer.headers), body=answer.body)
                    return
                target = urljoin(target, location)
                if answer.status in (301, 302, 303) and method not in ("GET", "HEAD"):
                    method, body = "GET", None
            refused.append(f"{request.url}: more than {MAX_REDIRECTS} redirects")
            route.abort("failed")

        flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND",
                 f"--proxy-server=http://127.0.0.1:{_dead_port()}",
                 "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
        with sync_playwright() as pw:
            try:
                browser = pw.chromium.launch(executable_path=executable_path, headless=True, args=flags)
            except PlaywrightError as exc:
                raise BrowserUnavailableError(
                    f"browser_tool could not start Chromium at {executable_path!r}: {exc.message[:300]}"
                ) from None
            try:
                context = browser.new_context(service_workers="block")
                context.route("**/*", route)
                page = context.new_page()
                try:
                    response = page.goto(url, timeout=timeout_s * 1000, wait_until="load")
                except PlaywrightError as exc:
                    why = "; ".join(refused) or exc.message.splitlines()[0]
                    raise ToolError(f"browser {op} of {url!r} failed: {why}") from None
                result: dict[str, Any] = {"op": op, "url": page.url,
                                          "status": response.status if response else None}
                if refused:
                    result["blocked"] = refused[:20]
                if op == "content":
                    result["html"] = page.content()[:max_bytes]
                elif op == "scrape":
                    result["texts"] = page.locator(input.get("selector") or "body").all_inner_texts()
                elif op == "screenshot":
                    result["png_base64"] = base64.b64encode(page.screenshot(full_page=True)).decode()
                else:
                    result["pdf_base64"] = base64.b64encode(page.pdf()).decode()
                return result
            finally:
                browser.close()

    schema = op_schema({
        "op": {"type": "string", "enum": list(OPS)},
        "url": {"type": "string", "description": "An http(s) URL of a public site."},
        "selector": {"type": "string", "description": "scrape: a CSS selector (default: body)."},
    }, required=("op", "url"))
    return define_tool(
        name,
        description=("A headless browser: op content (the page's HTML), scrape (texts of a CSS selector), "
                     "screenshot (PNG, base64) or pdf (base64) of a public http(s) URL."),
        input_schema=schema, execute=execute, needs_approval=needs_approval,
    )
