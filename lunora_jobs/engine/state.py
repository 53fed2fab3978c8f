"""Synced state: what ``ctx.get_state()`` / ``ctx.set_state(value)`` do inside a tool.

The state is a JSON value on the thread (``agent_threads.state``), seeded once from the agent's
``initial_state`` when the thread is created (first writer wins). ``set_state`` is an absolute
replace. A write whose JSON equals the current value changes nothing and publishes nothing — which
is also what makes a retried step that re-applies a replay-stable value a no-op.

Example::

    get_state, set_state = state_accessors(deps, thread_id, "t1")
    set_state({"step": 1})   # writes and publishes {"type": "state", "state": {"step": 1}}
    set_state({"step": 1})   # same JSON: no write, no event
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lunora_jobs.engine.context import EngineDeps


def canonical(value: Any) -> str:
    """The JSON text two equal states share (key order and spacing do not matter)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_accessors(
    deps: EngineDeps, thread_id: str, thread_key: str
) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """``(get_state, set_state)`` bound to one thread, for a ``ToolContext``."""
    store = deps.store

    def get_state() -> Any:
        thread = store.get_thread_by_id(thread_id)
        return None if thread is None else thread.state

    def set_state(value: Any) -> None:
        try:
            wanted = canonical(value)  # refuse what the database cannot hold before writing
        except (TypeError, ValueError) as exc:
            raise TypeError(f"ctx.set_state needs a JSON-serialisable value: {exc}") from exc
        if wanted == canonical(get_state()):
            return
        store.patch_thread(thread_id, state=value)
        deps.events.publish(thread_key, {"type": "state", "state": json.loads(wanted)})

    return get_state, set_state
