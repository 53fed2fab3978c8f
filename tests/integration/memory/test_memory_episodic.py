"""Episodic memory on real stores: one summary per answered run, recalled across threads for the
same owner only, bounded by ``max_episodes`` / ``ttl_s``, written once whatever crashes."""

from __future__ import annotations

from typing import Any

import pytest
from memory_models import SUMMARY_INSTRUCTIONS, KeyedModel

from lunora_jobs import define_agent
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.store import AgentStore
from lunora_jobs.testing import FakeClock, Harness, agent_harness, final_turn


def _agent(**episodic: Any) -> Any:
    return define_agent(name="diary", model="offline", instructions="Be brief.",
                        memory={"kind": "episodic", "episodic": episodic})


def _turn_prompts(harness: Harness) -> list[str]:
    """The system prompts of the agent's turns (not of the summary calls)."""
    return [str(p[0]["content"]) for p in harness.model.calls if p[-1]["content"] != SUMMARY_INSTRUCTIONS]


def test_an_answered_run_is_summarized_once_and_recalled_in_another_thread(
    store: AgentStore, clock: FakeClock
) -> None:
    model = KeyedModel(
        {"When does order 42 ship?": "Your order ships Friday.", "Is it still on track?": "Yes."},
        {"When does order 42 ship?": "Alice asked when order 42 ships; told Friday.",
         "Is it still on track?": "Alice re-checked order 42."},
    )
    harness = agent_harness(_agent(recall=5), model=model, store=store)
    first = harness.run(input="When does order 42 ship?", thread_key="a", owner="alice")
    assert [t.step for t in harness.dispatched] == ["memory:recall", "llm:turn:0", "memory:episode"]
    exchange = [m["content"] for m in harness.model.calls[1][:2]]
    assert exchange == ["When does order 42 ship?", "Your order ships Friday."]
    episode = harness.store.get_step(first.run_id, "memory:episode")
    assert episode is not None and episode.result == {
        "summary": "Alice asked when order 42 ships; told Friday.", "inserted": True}
    clock.advance(1_000)
    second = harness.run(input="Is it still on track?", thread_key="b", owner="alice")
    assert second.stopped == "final"
    prompts = _turn_prompts(harness)
    assert prompts[0] == "Be brief."  # nothing was recorded before the first run
    assert prompts[1] == ("Be brief.\n\nEarlier conversations with this user (oldest first):\n"
                          "- Alice asked when order 42 ships; told Friday.")
    # A redelivered write replays its memo: no second model call, no second episode.
    calls = len(model.calls)
    assert harness.app.execute_step(first.run_id, "memory:episode").status == "replayed"
    assert len(model.calls) == calls and rows_for(store).count_episodes("alice") == 2
    assert rows_for(store).recent_episodes("alice", 5, now=harness.app.deps.now(), ttl_ms=None) == [
        "Alice asked when order 42 ships; told Friday.", "Alice re-checked order 42."]


def test_owners_never_recall_each_other_and_anonymous_runs_skip_the_tier(store: AgentStore) -> None:
    model = KeyedModel(
        {"my locker code is 4471": "noted", "what is alice's code?": "no idea", "and now?": "hi"},
        {"my locker code is 4471": "Alice shared her locker code 4471.",
         "what is alice's code?": "Bob asked for someone else's code."},
    )
    harness = agent_harness(_agent(), model=model, store=store)
    harness.run(input="my locker code is 4471", thread_key="a", owner="alice")
    harness.run(input="what is alice's code?", thread_key="b", owner="bob")
    anonymous = harness.run(input="and now?", thread_key="c")
    assert all("4471" not in p for p in _turn_prompts(harness)[1:])
    assert rows_for(store).count_episodes("bob") == 1 and rows_for(store).count_episodes("alice") == 1
    recall = harness.store.get_step(anonymous.run_id, "memory:recall")
    assert recall is not None and recall.result["skipped"].startswith("anonymous")
    assert harness.store.get_step(anonymous.run_id, "memory:episode") is None  # not even dispatched
    assert [c.split(":")[0] for c in model.calls] == ["turn", "summary", "turn", "summary", "turn"]


def test_the_cap_keeps_the_newest_episodes_and_the_ttl_forgets_old_ones(
    store: AgentStore, clock: FakeClock
) -> None:
    questions = [f"question {n}" for n in range(4)]
    model = KeyedModel({q: "ok" for q in questions}, {q: f"episode {q[-1]}" for q in questions})
    harness = agent_harness(_agent(recall=20, max_episodes=2, ttl_s=3600), model=model, store=store)
    rows = rows_for(store)
    for n in range(3):
        harness.run(input=questions[n], thread_key=f"t{n}", owner="carol")
        clock.advance(1_000)
    assert rows.count_episodes("carol") == 2  # bounded on write: the oldest was pruned
    assert rows.recent_episodes("carol", 20, now=clock(), ttl_ms=3_600_000) == ["episode 1", "episode 2"]
    assert _turn_prompts(harness)[2].endswith("- episode 0\n- episode 1")
    clock.advance(3_600_000)  # an hour later both are past the TTL: never recalled, pruned on the next write
    harness.run(input=questions[3], thread_key="t3", owner="carol")
    assert _turn_prompts(harness)[-1] == "Be brief."
    assert rows.recent_episodes("carol", 20, now=clock(), ttl_ms=None) == ["episode 3"]


def test_a_summary_that_keeps_failing_never_fails_the_answered_run(store: AgentStore) -> None:
    model = KeyedModel({"do it": "done"})  # no summary scripted: every summary call raises
    harness = agent_harness(_agent(), model=model, store=store)
    result = harness.run(input="do it", thread_key="t", owner="dave")
    assert result.status == "completed" and result.text == "done"
    row = harness.store.get_step(result.run_id, "memory:episode")
    assert row is not None and row.status == "completed" and "KeyError" in row.result["skipped"]
    assert model.calls.count("summary:do it") == harness.agent.max_attempts
    assert rows_for(store).count_episodes("dave") == 0


def test_recording_an_episode_twice_inserts_it_once(store: AgentStore, clock: FakeClock) -> None:
    model = KeyedModel({"hi": "x"}, {"hi": "first summary"})
    harness = agent_harness(_agent(), model=model, store=store)
    run = harness.run(input="hi", thread_key="t", owner="erin")  # a real run row for the foreign key
    rows = rows_for(store)
    again = rows.add_episode("erin", run.run_id, "another summary", now=clock(), max_episodes=5, ttl_ms=None)
    assert again is False
    assert rows.recent_episodes("erin", 5, now=clock(), ttl_ms=None) == ["first summary"]


def test_a_worker_killed_mid_summary_is_taken_over_by_the_sweep(store: AgentStore, clock: FakeClock) -> None:
    class WorkerDied(BaseException):
        """Not an Exception: the engine records nothing, as with a SIGKILL."""

    class DiesOnFirstSummary(KeyedModel):
        def generate(self, messages: Any, **options: Any) -> Any:
            if messages[-1]["content"] == SUMMARY_INSTRUCTIONS and not self.calls.count("died"):
                self.calls.append("died")
                raise WorkerDied()
            return super().generate(messages, **options)

    model = DiesOnFirstSummary({"question": "answered"}, {"question": "Frank asked; answered."})
    harness = agent_harness(_agent(), model=model, store=store)
    with pytest.raises(WorkerDied):
        harness.run(input="question", thread_key="t", owner="frank")
    run = harness.store.list_runs()[0]
    assert run.status == "completed"  # the answer is recorded whatever happens to the write
    assert harness.app.sweep().dispatched == []  # the lease is live: nobody takes it over yet
    clock.advance(400_000)  # past the write's lease (step_timeout_s 300 + 30)
    report = harness.app.sweep()
    assert [t.step for t in report.dispatched] == ["memory:episode"]
    row = harness.store.get_step(run.id, "memory:episode")
    assert row is not None and (row.status, row.attempt) == ("completed", 2)
    assert rows_for(store).recent_episodes("frank", 5, now=clock(), ttl_ms=None) == ["Frank asked; answered."]
    assert harness.app.sweep().dispatched == []


def test_the_scripted_model_answers_a_single_runs_summary_as_its_next_turn(store: AgentStore) -> None:
    harness = agent_harness(_agent(), script=[final_turn("Friday."), final_turn("Asked about shipping.")],
                            store=store)
    harness.run(input="When does it ship?", thread_key="t", owner="gina")
    assert rows_for(store).recent_episodes("gina", 5, now=harness.app.deps.now(), ttl_ms=None) == [
        "Asked about shipping."]
