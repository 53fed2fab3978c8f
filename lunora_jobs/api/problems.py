"""RFC 9457 problem details: every error the API answers is ``application/problem+json``.

``type`` is a ``urn:lunora:problem:<slug>`` URI naming the kind of problem (clients switch on it),
``title`` is the same for every occurrence of that kind, ``detail`` says what happened and what to do,
``instance`` is the request path. Validation problems add ``errors`` (where and why).

A thread the caller may not see and a thread that does not exist produce the same problem, byte for
byte: the detail names only the key the caller sent.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from lunora_jobs.api.auth.base import AuthenticationError
from lunora_jobs.errors import (
    ConflictError,
    IdentityTooLongError,
    NotFoundError,
    QuotaExceededError,
    QuotaUnavailableError,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class Problem(BaseModel):
    """An RFC 9457 problem details object."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(default="about:blank", description="A URI naming the kind of problem.")
    title: str = Field(description="A short summary of the kind of problem.")
    status: int = Field(ge=400, le=599, description="The HTTP status code.")
    detail: str | None = Field(default=None, description="What happened here, and what to do.")
    instance: str | None = Field(default=None, description="The request path.")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Validation errors (422 only).")


class ProblemError(Exception):
    """Raise from a route to answer with a problem; ``slug`` names its ``type``."""

    def __init__(self, status: int, slug: str, detail: str, *, title: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.headers = headers


def problem_type(slug: str) -> str:
    """The ``type`` URI of a problem kind."""
    return f"urn:lunora:problem:{slug}"


def problem_response(
    request: Request | None, status: int, slug: str | None, detail: str | None, *, title: str | None = None,
    headers: dict[str, str] | None = None, errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    """A ``JSONResponse`` with the problem body and the problem media type."""
    body: dict[str, Any] = {
        "type": problem_type(slug) if slug else "about:blank",
        "title": title or _phrase(status),
        "status": status,
    }
    if detail:
        body["detail"] = detail
    if request is not None:
        body["instance"] = request.url.path
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


_SLUGS = {400: "bad-request", 401: "unauthenticated", 403: "forbidden", 404: "not-found",
          405: "method-not-allowed", 406: "not-acceptable", 409: "conflict", 413: "too-large",
          415: "unsupported-media-type", 422: "invalid-request", 429: "too-many-requests"}


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every error — ours, FastAPI's, Starlette's, and unexpected ones — as problem+json."""

    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ProblemError)
        return problem_response(request, exc.status, exc.slug, exc.detail, title=exc.title,
                                headers=exc.headers)

    async def on_unauthenticated(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 401, "unauthenticated", str(exc),
                                headers={"WWW-Authenticate": 'Bearer realm="lunora"'})

    async def on_not_found(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 404, "not-found", str(exc))

    async def on_conflict(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 409, "conflict", str(exc))

    async def on_quota_exceeded(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 429, "quota-exceeded", str(exc))

    async def on_quota_unavailable(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 503, "quota-unavailable", str(exc))

    async def on_identity_too_long(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 422, "invalid-request", str(exc))

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")),
                   "type": str(e.get("type", ""))} for e in exc.errors()]
        return problem_response(request, 422, "invalid-request",
                                "the request does not match the API's schema; see errors.", errors=errors)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        said = exc.detail if isinstance(exc.detail, str) else None
        detail = said if said != _phrase(exc.status_code) else None
        return problem_response(request, exc.status_code, _SLUGS.get(exc.status_code), detail,
                                headers=dict(exc.headers or {}) or None)

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("lunora api: unexpected error on %s %s", request.method, request.url.path,
                      exc_info=exc)
        return problem_response(request, 500, "internal", "an unexpected error happened; it was logged.")

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(AuthenticationError, on_unauthenticated)
    app.add_exception_handler(NotFoundError, on_not_found)
    app.add_exception_handler(ConflictError, on_conflict)
    app.add_exception_handler(IdentityTooLongError, on_identity_too_long)
    app.add_exception_handler(QuotaExceededError, on_quota_exceeded)
    app.add_exception_handler(QuotaUnavailableError, on_quota_unavailable)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: each status documented with the ``Problem`` schema (its media type
    is set to problem+json by ``publish_problem_media_type``)."""
    return {s: {"model": Problem, "description": _phrase(s)} for s in statuses}


def publish_problem_media_type(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite every 4xx/5xx response of an OpenAPI document to ``application/problem+json``."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict):
                continue
            for status, response in operation.get("responses", {}).items():
                content = response.get("content")
                if str(status)[0] in "45" and isinstance(content, dict) and "application/json" in content:
                    content[PROBLEM_JSON] = content.pop("application/json")
    return schema
