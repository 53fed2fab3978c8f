"""Authentication verdicts (DKIM, SPF, DMARC) from the ``Authentication-Results`` header of the one
server we trust.

RFC 8601: a border MTA records what it checked in an ``Authentication-Results`` header led by its
``authserv-id``, and removes headers carrying its own id from incoming mail. Anyone can write such a
header into a message, so only the topmost header with the configured ``authserv-id`` is read (the
trusted MTA prepends it); every other one — another server's, or a spoofed copy further down — is
ignored. Parsed with ``authres``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from email.message import Message

import authres

log = logging.getLogger("channels.email")

NONE = "none"


@dataclass(frozen=True, slots=True)
class AuthenticationVerdicts:
    """``dkim`` / ``spf`` / ``dmarc``: ``pass``, ``fail``, ``softfail``, ``neutral``, ``temperror``,
    ``permerror``, ``policy`` or ``none`` (nothing trusted said anything). ``dkim_domains`` holds the
    ``d=`` domains of passing DKIM signatures; ``source`` says where the verdicts came from
    (``authentication-results``, ``dkimpy``, both, or ``none``)."""

    dkim: str = NONE
    spf: str = NONE
    dmarc: str = NONE
    dkim_domains: tuple[str, ...] = ()
    source: str = NONE


def trusted_verdicts(message: Message, authserv_id: str | None) -> AuthenticationVerdicts:
    """The verdicts of the topmost ``Authentication-Results`` header by ``authserv_id``.

    With no ``authserv_id`` configured nothing is trusted (every verdict ``none``).
    """
    if not authserv_id:
        return AuthenticationVerdicts()
    wanted = authserv_id.strip().lower()
    for value in message.get_all("Authentication-Results") or []:
        try:
            parsed = authres.AuthenticationResultsHeader.parse_value(" ".join(str(value).split()))
        except Exception:  # authres raises its own SyntaxError and, on odd input, others
            continue
        if str(parsed.authserv_id).lower() != wanted:
            continue
        return _verdicts(parsed)
    return AuthenticationVerdicts()


def _verdicts(parsed: authres.AuthenticationResultsHeader) -> AuthenticationVerdicts:
    found: dict[str, list[str]] = {"dkim": [], "spf": [], "dmarc": []}
    domains: list[str] = []
    for result in parsed.results:
        method = str(result.method).lower()
        if method not in found:
            continue
        verdict = str(result.result).lower()
        found[method].append(verdict)
        if method == "dkim" and verdict == "pass":
            domain = _property(result, "header", "d")
            if domain:
                domains.append(domain.lower())
    return AuthenticationVerdicts(
        dkim=_best(found["dkim"]), spf=_best(found["spf"]), dmarc=_best(found["dmarc"]),
        dkim_domains=tuple(domains), source="authentication-results",
    )


def _best(verdicts: list[str]) -> str:
    """One verdict per method: ``pass`` if any result passed (a message may carry several DKIM
    signatures), else the first reported."""
    if "pass" in verdicts:
        return "pass"
    return verdicts[0] if verdicts else NONE


def _property(result: authres.AuthenticationResult, ptype: str, name: str) -> str | None:
    for prop in getattr(result, "properties", []) or []:
        if str(getattr(prop, "type", "")).lower() == ptype and str(getattr(prop, "name", "")).lower() == name:
            return str(prop.value)
    return None


def aligned(from_domain: str | None, verdicts: AuthenticationVerdicts) -> bool:
    """Whether the ``From`` domain is authenticated: DMARC passed, or a passing DKIM signature's
    ``d=`` is the From domain or a parent of it (relaxed alignment)."""
    if not from_domain:
        return False
    if verdicts.dmarc == "pass":
        return True
    domain = from_domain.lower()
    return any(domain == d or domain.endswith("." + d) for d in verdicts.dkim_domains)
