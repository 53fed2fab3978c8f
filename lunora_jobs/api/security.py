"""The caller's identity for each request, the console's session cookie, and CSRF protection.

Two ways to present a credential:

- ``Authorization: Bearer <token>`` — API clients. Not ambient (a browser never attaches it on its
  own), so no CSRF check applies.
- the ``lunora_session`` cookie — the console, after ``POST /session``. The cookie is ``HttpOnly``,
  ``SameSite=Strict`` (``Secure`` over https) and holds the same credential, verified the same way.
  Because a browser attaches cookies by itself, every state-changing request authenticated by the
  cookie must also carry ``X-CSRF-Token`` — a value bound to the credential (an HMAC of a fixed label
  keyed by it, which a page on another origin can neither read nor compute) — and, when the browser
  sends ``Origin``, come from this origin or a configured one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Collection
from dataclasses import dataclass

from fastapi import Request
from starlette.requests import HTTPConnection

from lunora_jobs.api.auth.base import AuthenticationError, Authenticator, Identity
from lunora_jobs.api.problems import ProblemError

SESSION_COOKIE = "lunora_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CSRF_LABEL = b"lunora-console-csrf-v1"


def csrf_token(credential: str) -> str:
    """The CSRF token bound to a session credential."""
    mac = hmac.new(credential.encode("utf-8"), _CSRF_LABEL, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class Credential:
    """A credential and where it came from (``cookie`` means ambient: CSRF rules apply)."""

    value: str
    via_cookie: bool


def credential_of(conn: HTTPConnection) -> Credential | None:
    """The bearer token, else the session cookie, else None."""
    header = conn.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AuthenticationError("the Authorization header must be 'Bearer <token>'.")
        return Credential(value.strip(), via_cookie=False)
    cookie = conn.cookies.get(SESSION_COOKIE)
    if cookie:
        return Credential(cookie, via_cookie=True)
    return None


def same_origin(conn: HTTPConnection, allowed_origins: Collection[str]) -> bool:
    """Whether the request's ``Origin`` (when sent) is this server's origin or an allowed one."""
    origin = conn.headers.get("origin")
    if origin is None:
        return True  # not a cross-origin browser request (or a browser too old to say)
    secure = conn.url.scheme in ("https", "wss")
    own = f"{'https' if secure else 'http'}://{conn.headers.get('host', '')}"
    return origin == own or origin in allowed_origins


class Gatekeeper:
    """Resolves a request's ``Identity`` with the app's authenticator (fail closed)."""

    def __init__(self, authenticator: Authenticator, allowed_origins: Collection[str] = ()) -> None:
        self.authenticator = authenticator
        self.allowed_origins = frozenset(allowed_origins)

    def verify(self, credential: Credential) -> Identity:
        """The identity the credential proves, or ``AuthenticationError``."""
        identity = self.authenticator.authenticate(credential.value)
        if identity is None or not identity.subject.strip():
            raise AuthenticationError("the credential was not accepted; sign in again.")
        return identity

    def identify(self, conn: HTTPConnection, method: str) -> Identity:
        """Authenticate the request; enforce CSRF + origin on cookie-authenticated writes."""
        credential = credential_of(conn)
        if credential is None:
            raise AuthenticationError("no credential: send 'Authorization: Bearer <token>'.")
        identity = self.verify(credential)
        if credential.via_cookie and method not in SAFE_METHODS:
            self.check_csrf(conn, credential)
        return identity

    def check_csrf(self, conn: HTTPConnection, credential: Credential) -> None:
        """Refuse a cookie-authenticated write without the session's CSRF token or from another origin."""
        if not same_origin(conn, self.allowed_origins):
            raise ProblemError(403, "cross-origin", "this request comes from another origin; it was refused.")
        sent = conn.headers.get(CSRF_HEADER.lower(), "")
        if not hmac.compare_digest(sent.encode(), csrf_token(credential.value).encode()):
            raise ProblemError(403, "csrf", f"missing or wrong {CSRF_HEADER} header; reload the console.")

    def __call__(self, request: Request) -> Identity:
        """The FastAPI dependency."""
        return self.identify(request, request.method)
