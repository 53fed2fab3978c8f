"""The authenticator ``lunora api`` builds from the settings (fail closed: none configured is an error)."""

from __future__ import annotations

from lunora_jobs.api.auth.base import Authenticator, Identity
from lunora_jobs.api.auth.jwt import JWTAuthenticator
from lunora_jobs.api.auth.tokens import BearerTokenAuthenticator
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError


class AnyOf:
    """Tries several authenticators in order; the first identity wins."""

    def __init__(self, *authenticators: Authenticator) -> None:
        self._authenticators = authenticators

    def authenticate(self, credential: str) -> Identity | None:
        """The first identity any of them proves."""
        for authenticator in self._authenticators:
            found = authenticator.authenticate(credential)
            if found is not None:
                return found
        return None


def authenticator_from_settings(settings: Settings) -> Authenticator:
    """The token table (``LUNORA_API_TOKENS_FILE``) and/or the JWT verifier (``LUNORA_API_JWT_KEY`` or
    ``LUNORA_API_JWT_JWKS_URL``); raises ``ConfigurationError`` when neither is configured."""
    found: list[Authenticator] = []
    if settings.api_tokens_file is not None:
        found.append(BearerTokenAuthenticator.from_file(settings.api_tokens_file))
    if settings.api_jwt_key or settings.api_jwt_jwks_url:
        found.append(JWTAuthenticator(
            key=settings.api_jwt_key or None, jwks_url=settings.api_jwt_jwks_url or None,
            algorithms=settings.api_jwt_algorithms.split(","), issuer=settings.api_jwt_issuer,
            audience=settings.api_jwt_audience, admin_scope=settings.api_jwt_admin_scope or None,
            tenant_claim=settings.api_jwt_tenant_claim or None,
        ))
    if not found:
        raise ConfigurationError(
            "the API has no authenticator: set LUNORA_API_TOKENS_FILE (a JSON token table) or "
            "LUNORA_API_JWT_KEY / LUNORA_API_JWT_JWKS_URL (a JWT verifier)."
        )
    return found[0] if len(found) == 1 else AnyOf(*found)
