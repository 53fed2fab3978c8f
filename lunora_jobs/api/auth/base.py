"""Who is calling: the verified ``Identity`` and the ``Authenticator`` protocol that produces it.

The API never trusts a name from a request body or a query string: the only identity it knows is
what an authenticator verified from a credential (a bearer token from the table, a signed JWT).
An authenticator answers ``None`` for a credential it does not accept; the API then answers 401.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lunora_jobs.errors import LunoraError


class AuthenticationError(LunoraError):
    """A credential is missing, malformed, expired or not accepted (the API answers 401)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """A verified caller. ``subject`` becomes ``owner`` of the runs it starts and ``viewer`` of what it
    reads; ``admin`` lets the console list and open every run (the on-call engineer's view).
    ``tenant``: the tenant the caller acts for, recorded on the runs it starts; it confines what the
    caller reads of usage, quotas and action proposals to that tenant (an admin with a tenant is that
    tenant's admin; an admin without one is the operator, who sees every tenant)."""

    subject: str
    admin: bool = False
    tenant: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject.strip():
            raise AuthenticationError("a verified identity needs a non-empty subject")
        if self.tenant is not None and (not isinstance(self.tenant, str) or not self.tenant.strip()):
            raise AuthenticationError("a verified identity's tenant must be a non-empty string when set")


@runtime_checkable
class Authenticator(Protocol):
    """Turns a credential (the bearer token, or the console's session cookie) into an ``Identity``.

    Example::

        class HeaderSecret:
            def authenticate(self, credential: str) -> Identity | None:
                return Identity("ops") if credential == load_secret() else None
    """

    def authenticate(self, credential: str) -> Identity | None:
        """The identity ``credential`` proves, or None when it proves nothing."""
        ...
