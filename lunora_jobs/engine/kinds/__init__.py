"""Step kinds: one module per kind, registered here by name prefix.

Adding a kind is one new module (a ``StepKind`` subclass, see ``base.py``) and one
``register_step_kind`` line below (or a call from an extension at import). The pipeline looks a
step's kind up here and never needs editing for a new one.
"""

from __future__ import annotations

from lunora_jobs.engine.kinds.approval import ApprovalStep
from lunora_jobs.engine.kinds.base import (
    ALL_ROWS,
    NO_ROWS,
    After,
    DispatchNext,
    ReplanTurn,
    Retry,
    RunEnded,
    RunFails,
    StepKind,
    StepState,
    Work,
)
from lunora_jobs.engine.kinds.child import ChildStep
from lunora_jobs.engine.kinds.memory import MemoryStep
from lunora_jobs.engine.kinds.tool import ToolStep
from lunora_jobs.engine.kinds.turn import TurnStep
from lunora_jobs.engine.steps import StepName

__all__ = [
    "ALL_ROWS",
    "NO_ROWS",
    "After",
    "DispatchNext",
    "ReplanTurn",
    "Retry",
    "RunEnded",
    "RunFails",
    "StepKind",
    "StepState",
    "Work",
    "kind_of",
    "register_step_kind",
    "resolve",
    "step_kinds",
]

_KINDS: list[StepKind] = []


def register_step_kind(kind: StepKind) -> None:
    """Make steps whose names start with ``kind.prefix`` run as ``kind``. A prefix may not shadow
    or be shadowed by a registered one (``ValueError``); registering the same kind twice is a no-op."""
    for known in _KINDS:
        if known is kind or (type(known) is type(kind) and known.prefix == kind.prefix):
            return
        if known.prefix.startswith(kind.prefix) or kind.prefix.startswith(known.prefix):
            raise ValueError(f"step kind {kind.name!r} ({kind.prefix!r}) overlaps {known.name!r} "
                             f"({known.prefix!r}); give it a prefix of its own")
    _KINDS.append(kind)


def step_kinds() -> tuple[StepKind, ...]:
    """The registered kinds."""
    return tuple(_KINDS)


def resolve(step: str) -> tuple[StepKind, StepName]:
    """The kind of ``step`` and its parsed name; ``ValueError`` for a name no kind makes."""
    for kind in _KINDS:
        name = kind.parse(step)
        if name is not None:
            return kind, name
    raise ValueError(f"not a step name the engine makes: {step!r}")


def kind_of(step: str) -> StepKind:
    """The kind of ``step`` (``ValueError`` for a name no kind makes)."""
    return resolve(step)[0]


register_step_kind(TurnStep())
register_step_kind(ToolStep())
register_step_kind(ApprovalStep())
register_step_kind(MemoryStep())
register_step_kind(ChildStep())
