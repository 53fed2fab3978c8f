"""``define_agent(memory=...)``: the memory option, checked once at declaration.

Semantic memory (the default ``kind``) over a search source::

    memory={"source": docs, "top_k": 5}                       # inject (default): memory:retrieve
    memory={"source": docs, "mode": "agentic", "read": get}   # search_memory / read_memory tools

``source`` is a ``rag`` index (``define_rag(...)``: bound per run with the run's owner, so its
``rls_filter`` confines every search), a callable ``search(MemoryQuery)``, or the path of a function
registered with ``Lunora(functions=...)`` (called with ``{"query", "top_k", "owner"}``). ``read``
(agentic only) fetches one document by id: a callable ``read(id, identity)`` or a function path
(called with ``{"id", "owner"}``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from lunora_jobs.errors import InvalidAgentOptionError, OptionNotAvailableError

Mode = Literal["inject", "agentic"]
MAX_TOP_K = 50
"""The largest ``top_k`` a memory search takes (the model's ``top_k`` is capped at ``max_top_k``)."""


@dataclass(frozen=True)
class SemanticMemory:
    """A validated semantic memory: where to search and how the results reach the model."""

    source: Any
    top_k: int = 5
    mode: Mode = "inject"
    read: Any = None
    snippet_chars: int = 240
    max_top_k: int = 20
    namespace: str | Callable[[Any], str | None] | None = None
    """The rag namespace: a fixed name, or a callable(MemoryIdentity) -> name (a tenant per owner)."""
    filter: Mapping[str, Any] | None = None
    """A metadata filter fixed by the server (the model never chooses it); RLS keys win over it."""
    label: str = ""
    """Whose memory this is: ``""`` for the agent's own, the skill name for a skill's knowledge."""
    kind: Literal["semantic"] = field(default="semantic", init=False)

    @property
    def step(self) -> str:
        """The run-start read of inject mode: ``memory:retrieve`` (``memory:retrieve:<skill>``)."""
        return "memory:retrieve" + (f":{self.label}" if self.label else "")

    @property
    def search_tool(self) -> str:
        """The agentic search tool: ``search_memory`` (``search_<skill>``)."""
        return f"search_{self.label or 'memory'}"

    @property
    def read_tool(self) -> str:
        """The agentic read tool: ``read_memory`` (``read_<skill>``)."""
        return f"read_{self.label or 'memory'}"


_OPTIONS = ("kind", *(f.name for f in fields(SemanticMemory) if f.name not in ("kind", "label")))
_LATER_KINDS = {
    "graph": "memory kind 'graph' is not available yet; use the semantic kind (a source) meanwhile.",
    "episodic": "memory kind 'episodic' is not available yet; use the semantic kind (a source) meanwhile.",
}


def coerce_memory(value: Any, *, label: str = "") -> SemanticMemory | None:
    """``value`` (a mapping or a ``SemanticMemory``) validated; None stays None.

    Raises ``InvalidAgentOptionError`` naming the key and the fix (the caller prefixes the agent)."""
    if value is None or isinstance(value, SemanticMemory):
        return value
    if not isinstance(value, Mapping):
        raise InvalidAgentOptionError(
            f"memory must be a dict such as {{'source': docs, 'top_k': 5}}, got {type(value).__name__}."
        )
    kind = value.get("kind", "semantic")
    if kind in _LATER_KINDS:
        raise OptionNotAvailableError(_LATER_KINDS[kind])
    if kind != "semantic":
        raise InvalidAgentOptionError(f"memory kind={kind!r}; use 'semantic', 'graph' or 'episodic'.")
    unknown = sorted(set(value) - set(_OPTIONS))
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(_snake(str(key)), _OPTIONS, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise InvalidAgentOptionError(f"memory: unknown key {', '.join(hints)}. Keys: {', '.join(_OPTIONS)}.")
    options = {k: v for k, v in value.items() if k != "kind"}
    if "source" not in options or options["source"] is None:
        raise InvalidAgentOptionError(
            "memory needs a source: a rag index (define_rag(...)), a callable search(MemoryQuery), or a "
            "registered function path such as 'rag:search_docs'."
        )
    memory = SemanticMemory(**options, label=label)
    _check(memory)
    return memory


def _check(memory: SemanticMemory) -> None:
    if not _is_source(memory.source):
        raise InvalidAgentOptionError(
            f"memory source {memory.source!r} is not searchable: pass a rag index (define_rag(...)), a "
            "callable search(MemoryQuery), or a registered function path such as 'rag:search_docs'."
        )
    for name, minimum, maximum in (("top_k", 1, MAX_TOP_K), ("max_top_k", 1, MAX_TOP_K),
                                   ("snippet_chars", 16, 100_000)):
        number = getattr(memory, name)
        if isinstance(number, bool) or not isinstance(number, int) or not minimum <= number <= maximum:
            raise InvalidAgentOptionError(
                f"memory {name} must be an int in {minimum}..{maximum}, got {number!r}."
            )
    if memory.mode not in ("inject", "agentic"):
        raise InvalidAgentOptionError(f"memory mode={memory.mode!r}; use 'inject' (default) or 'agentic'.")
    if memory.read is not None:
        if memory.mode != "agentic":
            raise InvalidAgentOptionError(
                "memory read= mints the read_memory tool of mode='agentic'; set mode='agentic' or drop read=."
            )
        if not (callable(memory.read) or _is_path(memory.read)):
            raise InvalidAgentOptionError(
                "memory read must be a callable read(id, identity) -> str or a registered function path."
            )
    if memory.namespace is not None and not (isinstance(memory.namespace, str) or callable(memory.namespace)):
        raise InvalidAgentOptionError("memory namespace must be a str or a callable(identity) -> str.")
    if memory.filter is not None and not isinstance(memory.filter, Mapping):
        raise InvalidAgentOptionError("memory filter must be a mapping such as {'lang': 'en'}.")


def _is_source(source: Any) -> bool:
    rag_like = callable(getattr(source, "bind", None)) and callable(getattr(source, "retrieve", None))
    return rag_like or callable(source) or _is_path(source)


def _is_path(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
