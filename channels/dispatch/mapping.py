"""What a mapper (``on_inbound["map"]`` / ``on_email``) may return, normalised to a ``RunRequest``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lunora_jobs.errors import ConfigurationError


class MapperResultError(ConfigurationError):
    """A mapper returned something that is not a run input (the message names the fix)."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """A claimed event: the run input, and optionally its thread key, title and (email only) owner."""

    input: Any
    thread_key: str | None = None
    title: str | None = None
    owner: str | None = None


def run_request(value: Any, *, owner_allowed: bool) -> RunRequest | None:
    """``None`` (declined), a ``RunRequest``, a str (the input), or a dict with ``input`` and
    optionally ``thread_key`` and ``title`` (and ``owner`` where ``owner_allowed``: email, whose
    mapper derives it from the authentication verdicts)."""
    if value is None:
        return None
    if isinstance(value, RunRequest):
        request = value
    elif isinstance(value, str):
        request = RunRequest(value)
    elif isinstance(value, Mapping):
        allowed = {"input", "thread_key", "title"} | ({"owner"} if owner_allowed else set())
        extra = sorted(set(value) - allowed)
        if extra or "input" not in value:
            hint = " — the owner comes from the verified identity: set on_inbound['owner'] = fn(identity)" \
                if "owner" in extra else ""
            raise MapperResultError(
                f"a mapper returned keys {sorted(value)}; return None, a str, or a dict with 'input' "
                f"and optionally {sorted(allowed - {'input'})}{hint}"
            )
        request = RunRequest(value["input"], value.get("thread_key"), value.get("title"), value.get("owner"))
    else:
        raise MapperResultError(f"a mapper returned a {type(value).__name__}; return None, a str or a dict")
    for name in ("thread_key", "title", "owner"):
        field = getattr(request, name)
        if field is not None and (not isinstance(field, str) or not field.strip() or len(field) > 255):
            raise MapperResultError(
                f"a mapper returned {name}={field!r}; use a non-empty str of <= 255 chars"
            )
    if request.owner is not None and not owner_allowed:
        raise MapperResultError(
            "a webhook mapper may not set the owner; use on_inbound['owner'] = fn(identity)"
        )
    return request
