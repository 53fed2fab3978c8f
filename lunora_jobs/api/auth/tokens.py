"""``BearerTokenAuthenticator``: a table of opaque bearer tokens, each naming a subject.

Only SHA-256 digests of the tokens need to be kept (the table file holds no usable secret), and a
lookup compares digests in constant time, so response timing does not reveal a prefix match.

Example::

    auth = BearerTokenAuthenticator({"s3cret-token-for-u7": "u7"})
    auth.authenticate("s3cret-token-for-u7")      # Identity(subject="u7")
    BearerTokenAuthenticator.from_file("tokens.json")
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.errors import ConfigurationError


def token_digest(token: str) -> str:
    """The hex SHA-256 of ``token``: what a token table stores."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class BearerTokenAuthenticator:
    """Accepts the tokens of its table; every other credential proves nothing."""

    def __init__(self, tokens: Mapping[str, str | Identity] | None = None, *,
                 digests: Mapping[str, str | Identity] | None = None) -> None:
        """``tokens`` maps a plain token to a subject (or an ``Identity``); ``digests`` maps the hex
        SHA-256 of a token instead."""
        table: dict[str, Identity] = {}
        for token, who in (tokens or {}).items():
            table[token_digest(token)] = _identity(who)
        for digest, who in (digests or {}).items():
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
                raise ConfigurationError(f"token digest {digest[:12]!r}... is not a hex SHA-256 (64 digits).")
            table[digest.lower()] = _identity(who)
        if not table:
            raise ConfigurationError("the bearer-token table is empty; add at least one token.")
        self._table = table

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> BearerTokenAuthenticator:
        """From ``[{"subject": ..., "token_sha256": ... | "token": ..., "admin": bool, "tenant": ...}]``."""
        tokens: dict[str, Identity] = {}
        digests: dict[str, Identity] = {}
        for number, entry in enumerate(entries):
            subject = entry.get("subject")
            if not isinstance(subject, str) or not subject:
                raise ConfigurationError(f"token entry {number} has no 'subject'.")
            tenant = entry.get("tenant")
            if tenant is not None and (not isinstance(tenant, str) or not tenant):
                raise ConfigurationError(f"token entry {number}: 'tenant' must be a non-empty string.")
            who = Identity(subject, admin=bool(entry.get("admin", False)), tenant=tenant)
            if isinstance(entry.get("token_sha256"), str):
                digests[entry["token_sha256"]] = who
            elif isinstance(entry.get("token"), str) and entry["token"]:
                tokens[entry["token"]] = who
            else:
                raise ConfigurationError(f"token entry {number} needs 'token_sha256' (or 'token').")
        return cls(tokens, digests=digests)

    @classmethod
    def from_file(cls, path: str | Path) -> BearerTokenAuthenticator:
        """Load a JSON list of entries (see ``from_entries``)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read the token table {str(path)!r}: {exc}") from exc
        if not isinstance(data, list):
            raise ConfigurationError(f"the token table {str(path)!r} must be a JSON list of entries.")
        return cls.from_entries(data)

    def authenticate(self, credential: str) -> Identity | None:
        """The identity of a known token, else None."""
        wanted = token_digest(credential)
        found = None
        for digest, who in self._table.items():
            # Scan the whole table: the time taken does not depend on which entry matched.
            if hmac.compare_digest(digest, wanted):
                found = who
        return found


def _identity(who: str | Identity) -> Identity:
    return who if isinstance(who, Identity) else Identity(who)
