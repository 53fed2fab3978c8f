"""Our own DKIM check (dkimpy), for mail that arrives without a trusted ``Authentication-Results``.

Every ``DKIM-Signature`` is tried; the domains of those that verify are returned. Key lookups go to
DNS through dkimpy (``dns_txt`` replaces that, e.g. in tests or behind a caching resolver).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import dkim

log = logging.getLogger("channels.email")

DnsTxt = Callable[..., bytes | None]
"""dkimpy's ``dnsfunc``: ``(name: bytes, timeout=5) -> TXT record bytes | None``."""

MAX_SIGNATURES = 5


def dkim_pass_domains(raw: bytes, dns_txt: DnsTxt | None = None) -> tuple[int, tuple[str, ...]]:
    """How many DKIM signatures ``raw`` carries, and the ``d=`` domains of those that verify."""
    checker = dkim.DKIM(raw)
    count = sum(1 for name, _ in checker.headers if name.lower() == b"dkim-signature")
    domains: list[str] = []
    for index in range(min(count, MAX_SIGNATURES)):
        checker = dkim.DKIM(raw)
        try:
            ok = checker.verify(index, dnsfunc=dns_txt) if dns_txt is not None else checker.verify(index)
        except Exception as exc:  # dkimpy raises DKIMException subclasses and, on junk, others
            log.debug("lunora email: DKIM signature %d did not verify: %s", index, exc)
            continue
        if ok and checker.domain:
            domains.append(checker.domain.decode("ascii", "replace").lower())
    return count, tuple(domains)
