"""The app the agent_as_tool real-worker test runs (``LUNORA_APP=delegate_app:build_app``, this folder
on PYTHONPATH): a ``lead`` agent delegating to a ``researcher`` agent, each with its own scripted
model. Two gates let the test SIGKILL a worker at a known point (``DELEGATE_GATE_DIR``): a gate
appends the process id to ``<dir>/<name>.entered`` and waits until ``<dir>/<name>.open`` exists.

- ``DELEGATE_KILL_AT=start``: the researcher's instructions (resolved once, when the child run is
  started inside the lead's delegating step) pass the ``start`` gate;
- ``DELEGATE_KILL_AT=created``: the child's "running" announcement (made once its run row exists,
  before its first step is dispatched and before the lead records the call) passes ``created``;
- ``DELEGATE_KILL_AT=child``: the researcher's ``dig`` tool (a step of the child run) passes ``dig``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lunora_jobs import agent_as_tool, define_agent, define_tool
from lunora_jobs.engine.events import Event, LocalEventBus
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn

GATE_WAIT_S = 60.0
LEAD_ANSWER = "The sky is blue: Rayleigh scattering."
CHILD_ANSWER = "Rayleigh scattering."


def gate(name: str) -> None:
    """Announce this process at the gate ``name`` and wait (bounded) until the test opens it."""
    folder = Path(os.environ["DELEGATE_GATE_DIR"])
    with (folder / f"{name}.entered").open("a") as entered:
        entered.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + GATE_WAIT_S
    while not (folder / f"{name}.open").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the test never opened the gate {name!r}")
        time.sleep(0.05)


def _instructions(context: dict[str, Any]) -> str:
    if os.environ.get("DELEGATE_KILL_AT") == "start":
        gate("start")
    return "Research the question."


def _dig(args: dict[str, Any]) -> str:
    if os.environ.get("DELEGATE_KILL_AT") == "child":
        gate("dig")
    return "dug: scattering"


class GatedEvents(LocalEventBus):
    """Live updates stay in the process; the child's first "running" announcement passes a gate."""

    def publish(self, thread_key: str, event: Event) -> None:
        """Gate, then publish."""
        if (os.environ.get("DELEGATE_KILL_AT") == "created" and "/child-" in thread_key
                and event.get("status") == "running"):
            gate("created")
        super().publish(thread_key, event)


def build_app() -> Any:
    """A ``Lunora`` app on the environment; only ``lead`` is listed (its delegate joins by itself)."""
    from lunora_jobs.runtime import Lunora

    dig = define_tool("dig", description="Dig into the sources.",
                      input_schema={"type": "object", "properties": {}}, execute=_dig)
    researcher = define_agent(
        name="researcher", instructions=_instructions, tools=[dig], step_timeout_s=90,
        model=ScriptedModel([tool_call_turn("d1", "dig", {}), final_turn(CHILD_ANSWER)]),
    )
    lead = define_agent(
        name="lead", instructions="Delegate research.", step_timeout_s=90,
        tools=[agent_as_tool(researcher, description="Delegate deep research.", name="research")],
        model=ScriptedModel([tool_call_turn("c1", "research", {"input": "Why is the sky blue?"}),
                             final_turn(LEAD_ANSWER)]),
    )
    return Lunora.from_env(agents=[lead], redis_prefix=os.environ["DELEGATE_PREFIX"], events=GatedEvents())
