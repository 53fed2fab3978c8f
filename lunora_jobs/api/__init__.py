"""The HTTP API: runs, threads, approvals, live thread streams (SSE + WebSocket), the console.

Example::

    from lunora_jobs.api import BearerTokenAuthenticator, create_app
    api = create_app(app, BearerTokenAuthenticator({"s3cret": "user-7"}))

``lunora api`` serves the app named by ``LUNORA_APP`` with the authenticator of the settings.
"""

from lunora_jobs.api.app import create_app
from lunora_jobs.api.auth import (
    AnyOf,
    AuthenticationError,
    Authenticator,
    BearerTokenAuthenticator,
    Identity,
    JWTAuthenticator,
    authenticator_from_settings,
    token_digest,
)
from lunora_jobs.api.problems import Problem, ProblemError

__all__ = [
    "AnyOf",
    "AuthenticationError",
    "Authenticator",
    "BearerTokenAuthenticator",
    "Identity",
    "JWTAuthenticator",
    "Problem",
    "ProblemError",
    "authenticator_from_settings",
    "create_app",
    "token_digest",
]
