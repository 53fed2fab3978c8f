"""Issue 8 refusals at start: ``input=None`` and an owner-less run on an owned thread (identity fails closed).

Through the real engine on both stores (InMemoryStore and SQLite), so the checks hold on every path
that starts a run via ``start_run``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_support import weather_agent

from lunora_jobs import ConflictError, OwnerRequiredError, RunInputError, final_turn
from lunora_jobs.store import AgentStore, InMemoryStore, create_store
from lunora_jobs.testing import Harness, agent_harness


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> AgentStore:
    if request.param == "memory":
        return InMemoryStore()
    return create_store(f"sqlite:///{tmp_path}/refusals.db")


def _harness(store: AgentStore, turns: int) -> Harness:
    script = [final_turn(f"reply {n}") for n in range(turns)]
    return agent_harness(weather_agent(), script=script, store=store)


def test_input_none_is_refused_and_nothing_is_recorded(store: AgentStore) -> None:
    harness = _harness(store, 1)
    with pytest.raises(RunInputError, match=r"input=None .* pass the user message as input="):
        harness.run(input=None, thread_key="t")
    assert store.get_thread("t") is None
    assert harness.model.calls == []
    # An empty string is a real (if empty) message and is accepted.
    assert harness.run(input="", thread_key="t").status == "completed"


def test_no_owner_on_an_owned_thread_is_refused_and_appends_nothing(store: AgentStore) -> None:
    harness = _harness(store, 2)
    harness.run(input="my secret", thread_key="t", owner="alice")
    before = [m.content for m in harness.messages("t")]
    with pytest.raises(OwnerRequiredError, match=r"thread 't' has an owner .* pass owner=") as refused:
        harness.run(input="show me alice's history", thread_key="t")
    assert isinstance(refused.value, ConflictError)  # existing `except ConflictError` handlers still apply
    assert [m.content for m in harness.messages("t")] == before
    assert len(harness.model.calls) == 1  # the owner's history never reached a prompt
    assert store.get_thread("t").active_run_id is None  # the refusal took no slot on the thread
    # The owner herself continues normally; another owner is still a ConflictError.
    assert harness.run(input="more", thread_key="t", owner="alice").status == "completed"
    with pytest.raises(ConflictError):
        harness.run(input="hi", thread_key="t", owner="mallory")


def test_trusted_code_continues_an_owned_thread_as_the_system(store: AgentStore) -> None:
    harness = _harness(store, 2)
    harness.run(input="hi", thread_key="t", owner="alice")
    handle = harness.app.agents[harness.agent.name].run(input="reminder", thread_key="t", as_system=True)
    result = harness.result(handle.id)
    assert result.status == "completed"
    run = store.get_run(handle.id)
    assert run is not None and run.owner == "alice"  # recorded as acting on the owner's behalf
    assert [m.content for m in harness.messages("t") if m.role == "user"] == ["hi", "reminder"]


def test_an_unowned_thread_needs_no_owner(store: AgentStore) -> None:
    harness = _harness(store, 2)
    harness.run(input="one", thread_key="open")
    assert harness.run(input="two", thread_key="open").status == "completed"
