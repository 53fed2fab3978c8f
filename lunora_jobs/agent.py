"""``define_agent``: declare an agent once; every bad option fails here, not at run time.

Example::

    support = define_agent(
        name="support", instructions="You are a helpful support agent.",
        model="openai:gpt-4o-mini", tools=[charge_card], max_turns=8,
        stop_when=has_tool_call("finalize"), output=Answer, compaction={"max_messages": 40},
    )
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from lunora_jobs.config import Settings
from lunora_jobs.errors import (
    ConfigurationError,
    DuplicateToolError,
    InvalidAgentOptionError,
)
from lunora_jobs.inbound import InboundOptions, coerce_inbound
from lunora_jobs.loop import (
    CompactionOptions,
    OutputSpec,
    PrepareStep,
    RepairToolCall,
    StepFinish,
    StopCondition,
)
from lunora_jobs.memory.options import MemoryOption, SemanticMemory, coerce_memory
from lunora_jobs.memory.tools import memory_tools
from lunora_jobs.models.base import Model, ToolSpec
from lunora_jobs.models.registry import check_model_spec, resolve_model
from lunora_jobs.retry_policy import RetryPolicy
from lunora_jobs.skills import SkillDefinition
from lunora_jobs.telemetry.base import Telemetry
from lunora_jobs.telemetry.combine import coerce_telemetry
from lunora_jobs.tools import ToolDefinition, coerce_tool

AGENT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
ConcurrentRunPolicy = Literal["reject", "replace", "queue"]
ApprovalMode = Literal["blocking", "independent"]
Instructions = str | Callable[[dict[str, Any]], str]
ModelOption = str | Model | Callable[[Settings], Model]


@dataclass(frozen=True)
class AgentDefinition:
    """A validated agent declaration. Build it with ``define_agent``; it holds no runtime state."""

    name: str
    instructions: Instructions = ""
    model: ModelOption = "auto"
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    max_turns: int = 10
    stop_when: tuple[StopCondition, ...] = ()
    prepare_step: PrepareStep | None = None
    repair_tool_call: RepairToolCall | None = None
    compaction: CompactionOptions | None = None
    output: OutputSpec | None = None
    on_step_finish: Callable[[StepFinish], None] | None = None
    telemetry: Telemetry | None = None
    """Traces of the agent's runs, turns and tool calls (``lunora_jobs.telemetry``), or None."""
    on_concurrent_run: ConcurrentRunPolicy = "reject"
    initial_state: Any = None
    memory: MemoryOption | None = None
    skills: tuple[SkillDefinition, ...] = ()
    on_email: Callable[..., Any] | None = None
    on_inbound: tuple[InboundOptions, ...] = ()
    action_approval_mode: ApprovalMode = "blocking"
    proposal_ttl_s: float | None = None
    """Independent mode: seconds an action proposal waits for a decision before it expires (None: never)."""
    wake_on_proposal_outcome: bool = False
    """Independent mode: a proposal's outcome (ran, failed, rejected, expired) also starts a new run on
    its thread, with the outcome as input (once per proposal; skipped while another run is in flight)."""
    max_attempts: int = 5
    """``retry.max_attempts`` (kept here too: every claim reads it)."""
    step_timeout_s: float = 300.0
    active_tools: tuple[str, ...] | None = None
    """The tools the model sees on every turn (``prepare_step`` may pick others per turn); None: all."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Attempts, backoff and which errors are retried (``lunora_jobs.retry_policy``); recorded per run."""
    run_timeout_s: float | None = None
    """Seconds a run may take from its start to its end (None: no limit); past it the run fails with
    ``RunTimeoutError`` at its next step boundary or sweep. Recorded per run."""

    def resolve_instructions(self, context: Mapping[str, Any]) -> str:
        """The system prompt for a run: ``context`` holds run_id, thread_key, owner, input.

        The agent's own instructions come first, then each skill's fragment in order, joined by blank
        lines. Resolve once at run start and persist it: a callable is not re-run on replay.
        """
        parts = [_resolve_text(self.name, self.instructions, context)]
        parts += [_resolve_text(self.name, getattr(s, "instructions", ""), context) for s in self.skills]
        return "\n\n".join(p for p in parts if p)

    @property
    def memories(self) -> tuple[MemoryOption, ...]:
        """The agent's memory, then each skill's knowledge, in skill order."""
        own = (self.memory,) if self.memory is not None else ()
        return own + tuple(s.memory for s in self.skills if isinstance(s.memory, SemanticMemory))

    @property
    def memory_reads(self) -> tuple[str, ...]:
        """The run-start memory steps, in the order they run before ``llm:turn:0``."""
        return tuple(m.read_step for m in self.memories if m.read_step)

    @property
    def memory_writes(self) -> tuple[str, ...]:
        """The memory steps dispatched once a run completed (``memory:episode``, ``memory:extract``)."""
        return tuple(m.write_step for m in self.memories if m.write_step)

    def resolve_model(self, settings: Settings | None = None) -> Model:
        """The agent's ``Model`` (strings through the provider registry)."""
        return resolve_model(self.model, settings)

    def tool_specs(self, active: Sequence[str] | None = None) -> list[ToolSpec]:
        """What the model sees of the tools, in declaration order (``active`` limits them)."""
        names = list(self.tools) if active is None else [n for n in self.tools if n in set(active)]
        return [self.tools[n].spec() for n in names]


def define_agent(
    *,
    name: str,
    instructions: Instructions = "",
    model: ModelOption = "auto",
    tools: Sequence[ToolDefinition] | Mapping[str, ToolDefinition] = (),
    max_turns: int = 10,
    stop_when: StopCondition | Sequence[StopCondition] | None = None,
    prepare_step: PrepareStep | None = None,
    repair_tool_call: RepairToolCall | None = None,
    compaction: CompactionOptions | Mapping[str, Any] | None = None,
    output: Any = None,
    on_step_finish: Callable[[StepFinish], None] | None = None,
    telemetry: Any = None,
    on_concurrent_run: str = "reject",
    initial_state: Any = None,
    memory: Any = None,
    skills: Sequence[SkillDefinition] = (),
    on_email: Callable[..., Any] | None = None,
    on_inbound: Any = None,
    action_approval_mode: str = "blocking",
    proposal_ttl_s: float | None = None,
    wake_on_proposal_outcome: bool = False,
    max_attempts: int | None = None,
    step_timeout_s: float = 300.0,
    active_tools: Sequence[str] | None = None,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    run_timeout_s: float | None = None,
    **unknown: Any,
) -> AgentDefinition:
    """Validate the options and return an ``AgentDefinition``.

    ``model`` is ``"provider:model"`` (``openai:gpt-4o-mini``, ``offline``, ``auto`` — the default: OpenAI
    when ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is set, else the offline model), a Model, or a
    callable(settings) -> Model. ``tools`` is a list (names from the tools) or a dict (keys name them).
    ``retry``: a ``RetryPolicy`` (or a dict of its fields): attempts (default 5; ``max_attempts=`` is
    the same number), the backoff's base and cap, which errors are retried. ``run_timeout_s``: a bound
    on a whole run (``RunTimeoutError``).
    Raises a ``ConfigurationError`` subclass naming the option and the fix.
    """
    if unknown:
        _reject_unknown(name, unknown)
    if not isinstance(name, str) or not AGENT_NAME.match(name):
        raise InvalidAgentOptionError(
            f"name {name!r} is invalid: start with a letter, then up to 63 letters, digits, '_' or '-' "
            "(e.g. name='support')."
        )
    where = f"Agent {name!r}"
    if not (isinstance(instructions, str) or callable(instructions)):
        raise InvalidAgentOptionError(f"{where}: instructions must be a str or a callable(context) -> str.")
    check_model_spec(model)
    _check_int(where, "max_turns", max_turns, 1)
    if max_attempts is not None:
        _check_int(where, "max_attempts", max_attempts, 1)
    policy = _wrap(where, lambda value: RetryPolicy.coerce(value, max_attempts), retry)
    if run_timeout_s is not None and (
        isinstance(run_timeout_s, bool) or not isinstance(run_timeout_s, int | float) or run_timeout_s <= 0
    ):
        raise InvalidAgentOptionError(f"{where}: run_timeout_s must be a positive number of seconds or None.")
    if isinstance(step_timeout_s, bool) or not isinstance(step_timeout_s, int | float) or step_timeout_s <= 0:
        raise InvalidAgentOptionError(f"{where}: step_timeout_s must be a positive number of seconds.")
    conditions = _as_tuple(stop_when)
    for hook_name, hook in [
        ("prepare_step", prepare_step),
        ("repair_tool_call", repair_tool_call),
        ("on_step_finish", on_step_finish),
        ("on_email", on_email),
    ]:
        if hook is not None and not callable(hook):
            raise InvalidAgentOptionError(f"{where}: {hook_name} must be callable or None.")
    for condition in conditions:
        if not callable(condition):
            raise InvalidAgentOptionError(
                f"{where}: stop_when entries must be callables like has_tool_call('x')."
            )
    if on_concurrent_run not in ("reject", "replace", "queue"):
        raise InvalidAgentOptionError(
            f"{where}: on_concurrent_run={on_concurrent_run!r}; use 'reject', 'replace' or 'queue'."
        )
    if action_approval_mode not in ("blocking", "independent"):
        raise InvalidAgentOptionError(
            f"{where}: action_approval_mode={action_approval_mode!r}; use 'blocking' or 'independent'."
        )
    if proposal_ttl_s is not None and (
        isinstance(proposal_ttl_s, bool) or not isinstance(proposal_ttl_s, int | float) or proposal_ttl_s <= 0
    ):
        raise InvalidAgentOptionError(
            f"{where}: proposal_ttl_s must be a positive number of seconds or None."
        )
    if not isinstance(wake_on_proposal_outcome, bool):
        raise InvalidAgentOptionError(f"{where}: wake_on_proposal_outcome must be True or False.")
    if wake_on_proposal_outcome and action_approval_mode != "independent":
        raise InvalidAgentOptionError(
            f"{where}: wake_on_proposal_outcome=True needs action_approval_mode='independent' (only "
            "independent approvals have proposal outcomes)."
        )
    telemetry_option = _wrap(where, coerce_telemetry, telemetry)
    inbound = coerce_inbound(where, on_inbound)
    compaction_options = _wrap(where, CompactionOptions.coerce, compaction)
    if compaction_options is not None and compaction_options.model is not None:
        check_model_spec(compaction_options.model)
    output_spec = _wrap(where, OutputSpec.coerce, output)
    if initial_state is not None:
        try:
            json.dumps(initial_state)
        except (TypeError, ValueError) as exc:
            raise InvalidAgentOptionError(
                f"{where}: initial_state must be JSON-serialisable ({exc})."
            ) from exc
    memory_options = _wrap(where, coerce_memory, memory)
    skill_list = _check_skills(where, skills)
    tool_map = _collect_tools(where, tools, skill_list, memory_options, name)
    gated_delegates = [n for n, t in tool_map.items() if t.delegate is not None and t.needs_approval]
    if action_approval_mode == "independent" and gated_delegates:
        raise InvalidAgentOptionError(
            f"{where}: the agent tool(s) {', '.join(map(repr, gated_delegates))} need approval, and an "
            "action proposal cannot start a child run; use action_approval_mode='blocking' or drop "
            "needs_approval."
        )
    return AgentDefinition(
        name=name,
        instructions=instructions,
        model=model,
        tools=tool_map,
        max_turns=max_turns,
        stop_when=conditions,
        prepare_step=prepare_step,
        repair_tool_call=repair_tool_call,
        compaction=compaction_options,
        output=output_spec,
        on_step_finish=on_step_finish,
        telemetry=telemetry_option,
        on_concurrent_run=on_concurrent_run,  # type: ignore[arg-type]  # checked above
        initial_state=initial_state,
        memory=memory_options,
        skills=skill_list,
        on_email=on_email,
        on_inbound=inbound,
        action_approval_mode=action_approval_mode,  # type: ignore[arg-type]  # checked above
        proposal_ttl_s=None if proposal_ttl_s is None else float(proposal_ttl_s),
        wake_on_proposal_outcome=wake_on_proposal_outcome,
        max_attempts=policy.max_attempts,
        step_timeout_s=float(step_timeout_s),
        retry=policy,
        run_timeout_s=None if run_timeout_s is None else float(run_timeout_s),
        active_tools=_check_active_tools(where, active_tools, tool_map, memory_options, skill_list, name),
    )


def _resolve_text(agent: str, instructions: Any, context: Mapping[str, Any]) -> str:
    if callable(instructions):
        text = instructions(dict(context))
        if not isinstance(text, str):
            raise ConfigurationError(
                f"Agent {agent!r}: an instructions callable returned {type(text).__name__}; return a str."
            )
        return text
    return str(instructions or "")


def _reject_unknown(name: Any, unknown: dict[str, Any]) -> None:
    """A misspelt or camelCase option (``maxTurns``) gets a named error with the right spelling."""
    known = [f.name for f in fields(AgentDefinition)]
    hints = []
    for option in sorted(unknown):
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", option).lower()
        close = [snake] if snake in known else difflib.get_close_matches(snake, known, n=1)
        hints.append(f"{option!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise InvalidAgentOptionError(
        f"Agent {name!r}: unknown option {', '.join(hints)}. Options: {', '.join(known)}."
    )


def _check_skills(where: str, skills: Sequence[SkillDefinition]) -> tuple[SkillDefinition, ...]:
    if isinstance(skills, str | bytes) or not isinstance(skills, Sequence):
        raise InvalidAgentOptionError(f"{where}: skills must be a list of define_skill(...) results.")
    seen: set[str] = set()
    for skill in skills:
        if not isinstance(skill, SkillDefinition):
            raise InvalidAgentOptionError(
                f"{where}: skills entry {skill!r} is not a skill; build it with define_skill(...)."
            )
        if skill.name in seen:
            raise InvalidAgentOptionError(f"{where}: the skill {skill.name!r} is listed twice; list it once.")
        seen.add(skill.name)
    return tuple(skills)


def _check_active_tools(
    where: str, active: Sequence[str] | None, tools: Mapping[str, ToolDefinition],
    memory: MemoryOption | None, skills: tuple[SkillDefinition, ...], agent: str,
) -> tuple[str, ...] | None:
    """Pinned tool names must be the agent's, and must keep every memory tool (else the model could
    never retrieve); checked here, at declaration, rather than hiding a tool at run time."""
    if active is None:
        return None
    if isinstance(active, str | bytes) or not all(isinstance(n, str) for n in active):
        raise InvalidAgentOptionError(f"{where}: active_tools must be a list of tool names.")
    unknown = [n for n in active if n not in tools]
    if unknown:
        raise InvalidAgentOptionError(
            f"{where}: active_tools names {', '.join(map(repr, unknown))}, which the agent does not "
            f"declare; its tools: {', '.join(tools) or '(none)'}."
        )
    memories = [memory] + [s.memory for s in skills]
    minted = [t.name for m in memories if isinstance(m, SemanticMemory) for t in memory_tools(m, agent)]
    hidden = [n for n in minted if n not in active]
    if hidden:
        raise InvalidAgentOptionError(
            f"{where}: active_tools leaves out the memory tool(s) {', '.join(map(repr, hidden))}; list "
            "them too (the model could not retrieve otherwise), or drop active_tools."
        )
    return tuple(dict.fromkeys(active))


def _check_int(where: str, option: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidAgentOptionError(f"{where}: {option} must be an int >= {minimum}, got {value!r}.")


def _as_tuple(stop_when: StopCondition | Sequence[StopCondition] | None) -> tuple[StopCondition, ...]:
    if stop_when is None:
        return ()
    if callable(stop_when):
        return (stop_when,)
    return tuple(stop_when)


def _wrap(where: str, coerce: Callable[[Any], Any], value: Any) -> Any:
    try:
        return coerce(value)
    except InvalidAgentOptionError as exc:
        raise type(exc)(f"{where}: {exc}") from exc  # keep the subclass (OptionNotAvailableError)


def _collect_tools(
    where: str,
    tools: Sequence[ToolDefinition] | Mapping[str, ToolDefinition],
    skills: tuple[SkillDefinition, ...],
    memory: MemoryOption | None = None,
    agent: str = "",
) -> dict[str, ToolDefinition]:
    """Flatten the agent's tools, its skills' tools and the memory tools (agentic mode) into one
    namespace; a clash is an error."""
    sources: list[tuple[str, str | None, Any]] = []
    if isinstance(tools, Mapping):
        sources += [("the agent", key, value) for key, value in tools.items()]
    elif isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise InvalidAgentOptionError(f"{where}: tools must be a list of tools or a dict name -> tool.")
    else:
        sources += [("the agent", None, value) for value in tools]
    for skill in skills:
        sources += [(f"skill {skill.name!r}", None, value) for value in skill.tools.values()]
    if isinstance(memory, SemanticMemory):
        sources += [("memory (mode='agentic')", None, value) for value in memory_tools(memory, agent)]
    for skill in skills:
        if isinstance(skill.memory, SemanticMemory):
            sources += [(f"skill {skill.name!r}'s knowledge", None, value)
                        for value in memory_tools(skill.memory, agent)]
    result: dict[str, ToolDefinition] = {}
    owners: dict[str, str] = {}
    for owner, key, raw in sources:
        value = coerce_tool(raw)
        if value is None:
            raise InvalidAgentOptionError(
                f"{where}: tool {key or raw!r} from {owner} is a {type(raw).__name__}, not a tool; "
                "wrap functions with @tool or define_tool(...)."
            )
        tool_def = replace(value, name=key) if key is not None and key != value.name else value
        if not tool_def.name:
            raise InvalidAgentOptionError(
                f"{where}: a tool from {owner} has no name; "
                "pass name= to define_tool or give tools as a dict."
            )
        if tool_def.name in result:
            raise DuplicateToolError(
                f"{where}: tool name {tool_def.name!r} is declared by both {owners[tool_def.name]} "
                f"and {owner}; "
                "rename one of them."
            )
        result[tool_def.name] = tool_def
        owners[tool_def.name] = owner
    return result
