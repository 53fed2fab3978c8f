"""Pluggable authentication for the HTTP API: a bearer-token table and a JWT verifier ship."""

from lunora_jobs.api.auth.base import AuthenticationError, Authenticator, Identity
from lunora_jobs.api.auth.from_settings import AnyOf, authenticator_from_settings
from lunora_jobs.api.auth.jwt import JWTAuthenticator
from lunora_jobs.api.auth.tokens import BearerTokenAuthenticator, token_digest

__all__ = [
    "AnyOf",
    "AuthenticationError",
    "Authenticator",
    "BearerTokenAuthenticator",
    "Identity",
    "JWTAuthenticator",
    "authenticator_from_settings",
    "token_digest",
]
