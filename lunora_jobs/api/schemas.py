"""The API's request and response bodies (pydantic): what ``/openapi.json`` publishes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_KEY = 255
MAX_SEQ = 2**62


def is_storable(value: str) -> bool:
    """Whether the database can hold ``value``: no NUL (PostgreSQL text), valid UTF-8 (no lone surrogate)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _storable(value: str) -> str:
    # PostgreSQL text cannot hold NUL, and a lone surrogate cannot be encoded as UTF-8: refuse both
    # up front (422) instead of failing inside the database.
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    return value


def _unicode(value: Any) -> Any:
    # Inside JSON a NUL is stored escaped (\u0000), but a lone surrogate still cannot be encoded.
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _unicode(key)
            _unicode(item)
    elif isinstance(value, list):
        for item in value:
            _unicode(item)
    return value


def _storable_json(value: Any) -> Any:
    # A string input becomes the user message's text as is: the NUL rule applies to it.
    return _storable(value) if isinstance(value, str) else _unicode(value)


Text = Annotated[str, AfterValidator(_storable)]
Key = Annotated[str, Field(min_length=1, max_length=MAX_KEY), AfterValidator(_storable)]
JsonValue = Annotated[Any, AfterValidator(_storable_json)]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class UsageOut(_Out):
    """Token usage."""

    input_tokens: int
    output_tokens: int


class RunStart(BaseModel):
    """Start a run of ``agent`` (or continue the conversation on ``thread_key``)."""

    model_config = ConfigDict(extra="forbid")

    agent: Key = Field(description="The registered agent's name (GET /agents).")
    input: JsonValue = Field(description="The user message: a string (no NUL), or any JSON value but null.",
                             json_schema_extra={"not": {"type": "null"}})
    thread_key: Key | None = Field(default=None, description="Continue this thread; omit for a new one.")
    title: Annotated[Text, Field(max_length=1000)] | None = None


class ThreadRunStart(BaseModel):
    """Start a run on the thread of the path."""

    model_config = ConfigDict(extra="forbid")

    agent: Key
    input: JsonValue = Field(json_schema_extra={"not": {"type": "null"}})
    title: Annotated[Text, Field(max_length=1000)] | None = None


class RunAccepted(_Out):
    """A started (or queued) run."""

    id: str
    thread_key: str
    status: str


class RunOut(_Out):
    """A run's status and, once over, its result."""

    id: str
    agent: str
    thread_key: str
    status: str
    stopped: str | None = Field(description="final | maxTurns | stopCondition | cancelled (once over).")
    turns: int
    usage: UsageOut
    text: str | None = Field(description="The last turn's text.")
    output: Any = Field(default=None, description="The structured answer, when the agent declares one.")
    error: str | None
    created_at: int = Field(description="Epoch milliseconds.")
    updated_at: int


class RunSummary(_Out):
    """A row of the runs list."""

    id: str
    thread_key: str
    agent: str
    owner: str | None
    status: str
    stopped: str | None
    turns: int
    usage: UsageOut
    cost_usd: float | None = Field(description="The run's cost in USD summed over its usage-ledger rows "
                                               "(None when no row carries a cost).")
    created_at: int
    updated_at: int


class RunPage(_Out):
    """Runs newest first; pass ``next_cursor`` as ``cursor`` for the next page (None: last page)."""

    runs: list[RunSummary]
    next_cursor: str | None


class StepOut(_Out):
    """A row of the step ledger, for the timeline."""

    name: str
    kind: str = Field(description="turn | tool | approval | memory")
    status: str
    attempt: int
    started_at: int = Field(description="When the step was first claimed (epoch ms).")
    finished_at: int | None = Field(description="When it completed or failed; None while running.")
    duration_ms: int | None
    summary: str | None = Field(description="The result, shortened: a turn's text or calls, a tool's output.")
    error: str | None


class TimelineOut(_Out):
    """A run and its steps in ledger order."""

    run: RunOut
    steps: list[StepOut]


class CancelOut(_Out):
    """What a cancel did."""

    cancelled: bool = Field(description="False when the run had already ended.")
    status: str


class RetryOut(_Out):
    """What a retry did: the run is running again from the step it failed at."""

    status: str
    steps: list[str] = Field(description="The steps given fresh attempts (completed ones stay memoized).")


class ThreadOut(_Out):
    """A thread (conversation)."""

    key: str
    title: str | None
    status: str
    agent: str | None
    active_run_id: str | None
    state: Any = Field(default=None, description="The synced state.")
    usage: UsageOut
    created_at: int
    updated_at: int


class MessageOut(_Out):
    """A persisted message; ``seq`` orders the transcript (and is the stream's event id)."""

    seq: int
    role: str
    content: str | None
    run_id: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    metadata: dict[str, Any] | None
    created_at: int


class MessagePage(_Out):
    """Messages with ``seq > after``, oldest first; ``next_after`` continues, None at the end."""

    messages: list[MessageOut]
    next_after: int | None


class StateOut(_Out):
    """The thread's synced state."""

    state: Any = None


class ApprovalOut(_Out):
    """A tool call waiting for a human decision."""

    run_id: str
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]


class ApprovalsOut(_Out):
    """The calls the thread's active run waits on."""

    pending: list[ApprovalOut]


class DecisionIn(BaseModel):
    """An optional reason, shown to the model on reject."""

    model_config = ConfigDict(extra="forbid")

    reason: Annotated[Text, Field(max_length=2000)] | None = None


class DecisionOut(_Out):
    """``applied``, or ``unchanged`` when the same decision was already recorded."""

    result: Literal["applied", "unchanged"]


class AgentOut(_Out):
    """A registered agent."""

    name: str
    tools: list[str]


class AgentsOut(_Out):
    """The agents this API can start."""

    agents: list[AgentOut]


class SessionIn(BaseModel):
    """Sign the console in with a bearer token (or JWT)."""

    model_config = ConfigDict(extra="forbid")

    token: Annotated[Text, Field(min_length=1, max_length=8192)]


class SessionOut(_Out):
    """Who the session is, and the CSRF token its writes must send as ``X-CSRF-Token``."""

    subject: str
    admin: bool
    tenant: str | None = None
    """The tenant the caller acts for (what it reads of usage, quotas and proposals is confined to it)."""
    csrf_token: str | None = Field(description="Present for cookie sessions.")


class HealthOut(_Out):
    """Liveness."""

    status: Literal["ok"]
