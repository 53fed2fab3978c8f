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
from typing import Any, ClassVar, Literal

from lunora_jobs.errors import InvalidAgentOptionError

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
    def read_step(self) -> str | None:
        """The run-start read: inject mode's ``step``; None in agentic mode (the model searches)."""
        return self.step if self.mode == "inject" else None

    write_step: None = field(default=None, init=False)
    """Semantic memory writes nothing after a run (its source is indexed by the application)."""

    @property
    def heading(self) -> str:
        """What introduces the injected context in the system prompt."""
        whose = f"the {self.label!r} skill's knowledge" if self.label else "memory"
        return f"Relevant context from {whose}:"

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


@dataclass(frozen=True)
class EpisodicMemory:
    """A validated episodic memory: one summary per answered run, recalled by recency per owner.

    Storage is bounded: at most ``max_episodes`` per owner (the oldest are pruned on every write) and,
    with ``ttl_s``, none older than that (pruned on write, never recalled)."""

    recall: int = 5
    """How many of the owner's latest episodes ``memory:recall`` injects (1..20)."""
    extraction_model: Any = None
    """The model that writes the summary (a cheaper one); None: the agent's own."""
    max_episodes: int = 200
    ttl_s: float | None = None
    kind: ClassVar[Literal["episodic"]] = "episodic"
    label: ClassVar[str] = ""
    read_step: ClassVar[str] = "memory:recall"
    write_step: ClassVar[str] = "memory:episode"
    heading: ClassVar[str] = "Earlier conversations with this user (oldest first):"


@dataclass(frozen=True)
class GraphMemory:
    """A validated graph memory: entities and relations per owner, traversed breadth-first.

    Reads are bounded by ``depth`` / ``max_seeds`` / ``fan_out`` / ``max_nodes``; storage by
    ``max_entities`` / ``max_edges`` per owner (the oldest-and-lightest pruned on every write) and,
    with ``ttl_s``, by age."""

    depth: int = 2
    max_seeds: int = 4
    fan_out: int = 8
    max_nodes: int = 32
    extraction_model: Any = None
    """The model that extracts (a cheaper one, structured output); None: the agent's own."""
    max_entities: int = 500
    max_edges: int = 2000
    ttl_s: float | None = None
    kind: ClassVar[Literal["graph"]] = "graph"
    label: ClassVar[str] = ""
    read_step: ClassVar[str] = "memory:traverse"
    write_step: ClassVar[str] = "memory:extract"
    heading: ClassVar[str] = "What you know about this user (from earlier conversations):"


MemoryOption = SemanticMemory | EpisodicMemory | GraphMemory
_OPTIONS = ("kind", *(f.name for f in fields(SemanticMemory) if f.init and f.name != "label"))
_EPISODIC = tuple(f.name for f in fields(EpisodicMemory) if f.init)
_GRAPH = tuple(f.name for f in fields(GraphMemory) if f.init)
_INT_BOUNDS = {
    "recall": (1, 20), "max_episodes": (1, 1_000_000), "depth": (1, 6), "max_seeds": (1, 64),
    "fan_out": (1, 256), "max_nodes": (1, 1024), "max_entities": (1, 1_000_000), "max_edges": (1, 10_000_000),
}


def coerce_memory(value: Any, *, label: str = "") -> MemoryOption | None:
    """``value`` (a mapping or a validated memory) validated; None stays None.

    Raises ``InvalidAgentOptionError`` naming the key and the fix (the caller prefixes the agent)."""
    if value is None or isinstance(value, MemoryOption):
        return value
    if not isinstance(value, Mapping):
        raise InvalidAgentOptionError(
            f"memory must be a dict such as {{'source': docs, 'top_k': 5}}, got {type(value).__name__}."
        )
    kind = value.get("kind", "semantic")
    if kind == "episodic":
        return _tier(value, "episodic", EpisodicMemory, _EPISODIC)
    if kind == "graph":
        return _tier(value, "graph", GraphMemory, _GRAPH)
    if kind != "semantic":
        raise InvalidAgentOptionError(f"memory kind={kind!r}; use 'semantic', 'graph' or 'episodic'.")
    _refuse_unknown("memory", value, _OPTIONS)
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


def coerce_knowledge(value: Any, *, label: str) -> SemanticMemory | None:
    """A skill's ``memory`` (its knowledge): semantic only, named after the skill."""
    memory = coerce_memory(value, label=label)
    if memory is not None and not isinstance(memory, SemanticMemory):
        raise InvalidAgentOptionError(
            f"memory kind={memory.kind!r}: a skill's memory is its knowledge, a semantic source; give the "
            "agent the episodic or graph memory instead."
        )
    return memory


def _tier(
    value: Mapping[str, Any], kind: str, cls: type[EpisodicMemory] | type[GraphMemory], known: tuple[str, ...]
) -> EpisodicMemory | GraphMemory:
    """An episodic or graph memory from ``{"kind": kind, kind: {...}}``."""
    _refuse_unknown("memory", value, ("kind", kind))
    options = value.get(kind) or {}
    if not isinstance(options, Mapping):
        raise InvalidAgentOptionError(f"memory {kind} must be a dict such as {cls.__name__}'s options.")
    _refuse_unknown(f"memory {kind}", options, known)
    memory = cls(**options)
    for name in known:
        if name not in _INT_BOUNDS:
            continue
        minimum, maximum = _INT_BOUNDS[name]
        number = getattr(memory, name)
        if isinstance(number, bool) or not isinstance(number, int) or not minimum <= number <= maximum:
            raise InvalidAgentOptionError(
                f"memory {kind} {name} must be an int in {minimum}..{maximum}, got {number!r}."
            )
    ttl = memory.ttl_s
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
        raise InvalidAgentOptionError(
            f"memory {kind} ttl_s must be a positive number of seconds, got {ttl!r}."
        )
    return memory


def _refuse_unknown(where: str, value: Mapping[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(str(k) for k in set(value) - set(known))
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(_snake(key), known, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise InvalidAgentOptionError(f"{where}: unknown key {', '.join(hints)}. Keys: {', '.join(known)}.")


def _is_source(source: Any) -> bool:
    rag_like = callable(getattr(source, "bind", None)) and callable(getattr(source, "retrieve", None))
    return rag_like or callable(source) or _is_path(source)


def _is_path(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
