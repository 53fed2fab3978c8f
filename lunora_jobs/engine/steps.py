"""Step names and message keys: the vocabulary of the step ledger.

A run is a sequence of named steps, unique per run in the ``agent_steps`` ledger:

- ``llm:turn:<n>`` — one model call (0-based ``n``) producing the assistant message of turn ``n``;
- ``tool:<name>:<call_id>`` — one tool call producing its tool message (``call_id`` is the provider's);
- ``approval:<call_id>`` — a wait for a human decision (no task, no lease);
- ``child:<call_id>`` — a wait for the child run a delegated call (``agent_as_tool``) started.

Messages are written under ``<run_id>:<role>:<position>``. The position derives from the step, never
from completion order, so a replay writes the same keys and the store dedupes them:

- the run's user input: ``user:0``;
- turn ``n``'s assistant message: ``assistant:<n>``;
- the result of turn ``n``'s call number ``i`` (call order in the assistant message): ``tool:<n>.<i>``.

Example::

    >>> turn_step(2)
    'llm:turn:2'
    >>> parse_step("tool:get_weather:call_1")
    StepName(kind='tool', turn=None, tool_name='get_weather', call_id='call_1', rest=None)
    >>> message_key("run-1", "tool", tool_position(0, 1))
    'run-1:tool:0.1'
"""

from __future__ import annotations

from dataclasses import dataclass

TURN_PREFIX = "llm:turn:"
TOOL_PREFIX = "tool:"
APPROVAL_PREFIX = "approval:"
CHILD_PREFIX = "child:"
MEMORY_PREFIX = "memory:"


@dataclass(frozen=True, slots=True)
class StepName:
    """A parsed step name."""

    kind: str
    """The step kind (``turn``, ``tool``, ``approval``, ``memory`` or a registered one)."""
    turn: int | None = None
    tool_name: str | None = None
    call_id: str | None = None
    rest: str | None = None
    """What follows the prefix, for kinds whose names are not structured further."""


def turn_step(number: int) -> str:
    """The ledger name of turn ``number`` (0-based)."""
    if number < 0:
        raise ValueError(f"turn numbers start at 0, got {number}")
    return f"{TURN_PREFIX}{number}"


def tool_step(name: str, call_id: str) -> str:
    """The ledger name of one tool call. Tool names never contain ':' (tools.py enforces it)."""
    return f"{TOOL_PREFIX}{name}:{call_id}"


def approval_step(call_id: str) -> str:
    """The ledger name of the approval wait for ``call_id``."""
    return f"{APPROVAL_PREFIX}{call_id}"


def part_id(call_id: str, part: str) -> str:
    """The id of part ``part`` of call ``call_id`` gated on its own (``code_tool``'s steps): what its
    approval wait (``approval:<call_id>.<part>``) and its tool-call row are keyed by."""
    return f"{call_id}.{part}"


def child_step(call_id: str) -> str:
    """The ledger name of the wait for the child run of delegated call ``call_id``."""
    return f"{CHILD_PREFIX}{call_id}"


def parse_step(name: str) -> StepName:
    """Split a step name into its parts. Raises ``ValueError`` on a name the engine never makes."""
    if name.startswith(TURN_PREFIX):
        digits = name[len(TURN_PREFIX) :]
        if digits.isdigit():
            return StepName("turn", turn=int(digits))
    elif name.startswith(TOOL_PREFIX):
        # The call id may contain ':' (some providers do); the tool name may not.
        tool_name, sep, call_id = name[len(TOOL_PREFIX) :].partition(":")
        if sep and tool_name and call_id:
            return StepName("tool", tool_name=tool_name, call_id=call_id)
    elif name.startswith(APPROVAL_PREFIX) and len(name) > len(APPROVAL_PREFIX):
        return StepName("approval", call_id=name[len(APPROVAL_PREFIX) :])
    elif name.startswith(CHILD_PREFIX) and len(name) > len(CHILD_PREFIX):
        return StepName("child", call_id=name[len(CHILD_PREFIX) :])
    elif name.startswith(MEMORY_PREFIX):
        return StepName("memory", rest=name[len(MEMORY_PREFIX) :])
    raise ValueError(f"not a step name the engine makes: {name!r}")


def turn_number(name: str) -> int | None:
    """``n`` for ``llm:turn:<n>``, else None (cheap check used when scanning the ledger)."""
    if name.startswith(TURN_PREFIX) and name[len(TURN_PREFIX) :].isdigit():
        return int(name[len(TURN_PREFIX) :])
    return None


def message_key(run_id: str, role: str, position: str | int) -> str:
    """The idempotency key of a message: ``<run_id>:<role>:<position>``."""
    return f"{run_id}:{role}:{position}"


def user_position() -> str:
    """The position of the run's user input message."""
    return "0"


def assistant_position(turn: int) -> str:
    """The position of turn ``turn``'s assistant message."""
    return str(turn)


def tool_position(turn: int, call_index: int) -> str:
    """The position of the result of call ``call_index`` of turn ``turn`` (call order, not finish order)."""
    return f"{turn}.{call_index}"
