"""Errors the HTTP client raises: the API's problem details, as named exceptions."""

from __future__ import annotations

from typing import Any

from lunora_jobs.errors import ConflictError, LunoraError, NotFoundError


class ApiError(LunoraError):
    """The API answered with an error; ``problem`` is its RFC 9457 body, ``status`` the HTTP status."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        detail = problem.get("detail") or problem.get("title") or f"HTTP {status}"
        super().__init__(f"{detail} (HTTP {status}, {problem.get('type', 'about:blank')})")
        self.status = status
        self.problem = problem


class ApiUnauthorizedError(ApiError):
    """401: the token is missing, wrong or expired."""


class ApiForbiddenError(ApiError):
    """403: refused (CSRF, origin)."""


class ApiNotFoundError(ApiError, NotFoundError):
    """404: no such thread or run — or one the caller may not see."""


class ApiConflictError(ApiError, ConflictError):
    """409: a run is in flight on the thread, or a decision contradicts an earlier one."""


class ApiValidationError(ApiError, ValueError):
    """422: the request does not match the API's schema (``problem["errors"]`` says where)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: ApiUnauthorizedError, 403: ApiForbiddenError, 404: ApiNotFoundError, 409: ApiConflictError,
    422: ApiValidationError,
}


def api_error(status: int, body: Any) -> ApiError:
    """The named error for a status and its (problem) body."""
    problem = body if isinstance(body, dict) else {"title": str(body)[:200]}
    return _BY_STATUS.get(status, ApiError)(status, problem)
