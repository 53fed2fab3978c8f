"""``JWTAuthenticator``: verify a signed JWT (PyJWT) and take its subject as the caller.

The signature, ``exp`` (required), ``nbf``, and — when configured — ``iss`` and ``aud`` are checked;
the accepted algorithms are a fixed list (never the token's own ``alg`` alone, so an ``alg: none``
or an HS256-with-the-public-key forgery is refused). The key is a PEM public key, a shared secret
for HS*, or a JWKS URL whose keys are fetched and cached by ``jwt.PyJWKClient``.

Example::

    auth = JWTAuthenticator(key=public_pem, algorithms=["RS256"], issuer="https://idp.example",
                            audience="lunora")
    auth.authenticate(token)            # Identity(subject=<sub>, admin="lunora:admin" in scope)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import jwt

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.errors import ConfigurationError

log = logging.getLogger(__name__)

_ASYMMETRIC = ("RS", "PS", "ES", "Ed")


class JWTAuthenticator:
    """Accepts JWTs signed by the configured key; ``sub`` (or ``subject_claim``) is the subject and,
    with ``tenant_claim``, that claim the caller's tenant (required then: fail closed)."""

    def __init__(
        self, *, key: str | bytes | None = None, jwks_url: str | None = None,
        algorithms: Sequence[str] = ("RS256",), issuer: str | None = None, audience: str | None = None,
        subject_claim: str = "sub", admin_scope: str | None = "lunora:admin", leeway_s: float = 30.0,
        tenant_claim: str | None = None,
    ) -> None:
        if (key is None) == (jwks_url is None):
            raise ConfigurationError("JWTAuthenticator needs one of key= (PEM or secret) or jwks_url=.")
        algorithms = [a.strip() for a in algorithms if a.strip()]
        if not algorithms or any(a.lower() == "none" for a in algorithms):
            raise ConfigurationError("JWTAuthenticator needs signing algorithms (e.g. RS256); not 'none'.")
        if jwks_url is not None and not all(a.startswith(_ASYMMETRIC) for a in algorithms):
            raise ConfigurationError("a JWKS URL serves public keys: use RS*/PS*/ES*/EdDSA with it.")
        self._key = key
        self._jwks = jwt.PyJWKClient(jwks_url, cache_keys=True) if jwks_url else None
        self._algorithms = algorithms
        self._issuer = issuer
        self._audience = audience
        self._subject_claim = subject_claim
        self._admin_scope = admin_scope
        self._leeway = leeway_s
        self._tenant_claim = tenant_claim

    def authenticate(self, credential: str) -> Identity | None:
        """The identity of a valid token, else None (the reason is logged at debug level)."""
        try:
            key: Any = self._key
            if self._jwks is not None:
                key = self._jwks.get_signing_key_from_jwt(credential).key
            claims = jwt.decode(
                credential, key, algorithms=self._algorithms, issuer=self._issuer, audience=self._audience,
                leeway=self._leeway,
                options={"require": ["exp", self._subject_claim], "verify_aud": self._audience is not None},
            )
        except jwt.PyJWTError as exc:
            log.debug("lunora: JWT refused: %s", exc)
            return None
        subject = claims.get(self._subject_claim)
        if not isinstance(subject, str) or not subject.strip():
            return None
        tenant = claims.get(self._tenant_claim) if self._tenant_claim else None
        if self._tenant_claim and (not isinstance(tenant, str) or not tenant.strip()):
            return None  # a tenant is required by the configuration: a token without one proves nothing
        return Identity(subject, admin=self._is_admin(claims), tenant=tenant)

    def _is_admin(self, claims: dict[str, Any]) -> bool:
        if not self._admin_scope:
            return False
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else list(scope) if isinstance(scope, list) else []
        return self._admin_scope in scopes
