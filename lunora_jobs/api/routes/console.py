"""The console page (``/console``) and the JavaScript client (``/client/lunora.js``): static files, no
build step. Neither needs a credential to load; every call they make does."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse, Response

from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.problems import ProblemError

STATIC = resources.files("lunora_jobs.api") / "static"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8"}
# The console loads only its own scripts and styles and talks only to this origin.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def _static(name: str) -> Response:
    path = STATIC / name
    if "/" in name or name.startswith(".") or not path.is_file():
        raise ProblemError(404, "not-found", f"no file {name!r}")
    suffix = "." + name.rsplit(".", 1)[-1]
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    if suffix == ".html":
        headers.update({"Content-Security-Policy": CSP, "X-Frame-Options": "DENY",
                        "Referrer-Policy": "no-referrer"})
    return FileResponse(str(path), media_type=_TYPES.get(suffix, "application/octet-stream"), headers=headers)


def router(ctx: ApiContext) -> APIRouter:
    """Console and client routes (kept out of the OpenAPI document: they are files, not API)."""
    api = APIRouter(include_in_schema=False)

    @api.get("/console")
    def console_page() -> Response:
        return _static("console.html")

    @api.get("/console/")
    def console_slash() -> Response:
        return RedirectResponse("/console")

    @api.get("/console/static/{name}")
    def console_file(name: str) -> Response:
        return _static(name)

    @api.get("/client/lunora.js")
    def js_client() -> Response:
        return _static("lunora.js")

    return api
