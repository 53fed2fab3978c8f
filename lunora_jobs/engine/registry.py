"""Which agents live workers serve, and the runs that no worker serves (``UnknownAgentError``).

A run of an agent that no worker's app declares used to hang: every sweep skipped it as "another
app's agent". Several apps may share a database on different queues, so a sweep cannot fail what
its own app does not know. Instead every worker records the agents it serves in the store
(``store.declare_agents``: as each worker process loads its app, and on its app's sweep passes), and
a run is failed with ``UnknownAgentError`` only when

- it is ``running`` and nobody ever claimed a step of it (no ledger row), and
- it has not moved for ``LUNORA_UNKNOWN_AGENT_S`` (``Settings.unknown_agent_s``, default 300 s), and
- no declaration of its agent was seen within that bound either (no live worker of any app serves it).

A sweep does this a few times per bound (every quarter of it), so it costs no query on most ticks, and
the run fails within about 1.25 bounds of its start.

Limit: an app whose workers run without a beat renews its declaration only when a pool process
starts; if its workers then leave a run of its agent unclaimed for a whole bound (a backlog longer
than ``LUNORA_UNKNOWN_AGENT_S``), another app's sweep fails that run. Run beat for every app, or raise
the bound above the longest backlog.
"""

from __future__ import annotations

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.pipeline.dispatch import fail_run
from lunora_jobs.errors import UnknownAgentError

CHECKS_PER_BOUND = 4
"""How often per ``unknown_agent_s`` a sweeping process declares its agents and looks for runs
nobody serves: its declaration stays live in between (it is renewed well within the bound)."""


def declare(deps: EngineDeps) -> None:
    """Record that this process serves its app's agents (a worker loading its app, a sweep pass)."""
    if deps.agents:
        deps.store.declare_agents(sorted(deps.agents))


def registry_pass(deps: EngineDeps, limit: int) -> list[str]:
    """The sweep's part, when due: declare this app's agents, then fail the runs no live worker serves
    (at most ``limit``); their ids."""
    now = deps.now()
    bound_ms = int(deps.settings.unknown_agent_s * 1000)
    if deps.registry_checked_at and now - deps.registry_checked_at < bound_ms // CHECKS_PER_BOUND:
        return []
    deps.registry_checked_at = now
    declare(deps)
    failed: list[str] = []
    for run in deps.store.undeclared_runs(now - bound_ms, now - bound_ms, limit=limit):
        fail_run(deps, run, (
            f"{UnknownAgentError.__name__}: no live worker declares agent {run.agent!r} and nobody claimed "
            f"the run in {deps.settings.unknown_agent_s:g}s; add the agent to the app named by LUNORA_APP "
            "on the workers of its queue, then start the run again"
        ))
        failed.append(run.id)
    return failed
