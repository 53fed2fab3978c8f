"""A run of an agent no worker declares fails with ``UnknownAgentError`` on a real fleet, instead of
hanging (issue 8, part 4): the API side knows the agent, the workers' app (``LUNORA_APP``) does not.

The workers record their app's agents as their pool processes load it; beat's sweep renews them and,
once the run has waited unclaimed for ``LUNORA_UNKNOWN_AGENT_S`` (3 s here), fails it. A run of the
workers' own agent started at the same moment completes.
"""

from __future__ import annotations

import time

import pytest
from fleet_app import AGENTS
from fleet_support import Fleet

from lunora_jobs import define_agent, final_turn
from lunora_jobs.models.scripted import ScriptedModel
from lunora_jobs.runtime import Lunora

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOUND_S = 3.0


def test_a_run_of_an_agent_no_worker_declares_fails_with_unknown_agent_error(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LUNORA_UNKNOWN_AGENT_S", str(BOUND_S))
    fleet.env["LUNORA_UNKNOWN_AGENT_S"] = str(BOUND_S)
    ghost = define_agent(name="ghost", instructions="i", model=ScriptedModel([final_turn("never")]))
    api = Lunora.from_env(agents=[*AGENTS, ghost], redis_prefix=fleet.prefix)  # the API knows "ghost"
    fleet.start_worker(concurrency=1)
    fleet.start_beat()

    started = time.monotonic()
    lost = api.agents.ghost.run(input="hi", thread_key=f"{fleet.prefix}-ghost").id
    served = fleet.start_run("fanout")

    run = fleet.wait_run(lost, timeout=60)
    failed_after = time.monotonic() - started
    assert run.status == "failed", fleet.explain(lost)
    assert run.error is not None and run.error.startswith(
        "UnknownAgentError: no live worker declares agent 'ghost'"), run.error
    assert failed_after >= BOUND_S, failed_after  # not before the bound
    assert fleet.app.store.list_steps(lost) == []  # no worker ever took a step of it
    thread = fleet.app.store.get_thread(f"{fleet.prefix}-ghost")
    assert thread is not None and (thread.status, thread.active_run_id) == ("failed", None)
    assert fleet.wait_run(served, timeout=60).status == "completed", fleet.explain(served)
    print(f"\nunknown agent: failed {failed_after:.1f} s after its start (bound {BOUND_S:g} s)")
    api.close()
