"""Quotas on a real Celery worker (private Redis broker + PostgreSQL): a run under way stops at its
next turn once its tenant's quota is spent elsewhere, and a new run of that tenant is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from private_redis import PrivateRedis
from quota_app import TENANT_TOKENS, key
from worker_fleet import WorkerFleet, unique_prefix

from lunora_jobs import QuotaExceededError
from lunora_jobs.store.records import UsageEntry

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: Any) -> Iterator[WorkerFleet]:
    prefix = unique_prefix("quota")
    url = private_redis.url(5)
    fleet = WorkerFleet(pg_url, url, monkeypatch, app_module="quota_app", here=HERE, prefix=prefix,
                        env={"QUOTA_REDIS_URL": url, "QUOTA_PREFIX": prefix})
    try:
        yield fleet
    finally:
        fleet.close()


def test_a_run_on_a_worker_stops_at_its_next_turn_once_its_tenant_is_over_quota(fleet: WorkerFleet) -> None:
    fleet.start_worker(concurrency=1)
    app = fleet.app
    handle = app.agents.spender.run(input="go", thread_key="t1", owner="u7", tenant="acme")
    fleet.wait_for("the gate tool to start", lambda: fleet.redis.llen(key("entered")) >= 1)
    # Another process spends the tenant's day while this run sits in its tool call.
    app.store.record_usage(UsageEntry(actor="u8", tenant="acme", model="m", input_tokens=TENANT_TOKENS))
    fleet.redis.set(key("release"), "1")
    run = fleet.wait_status(handle.id, "completed", "failed")
    assert run.status == "failed", fleet.logs()
    assert "QuotaExceededError: over quota: tenant 'acme': 1000 of 1000 tokens" in (run.error or "")
    steps = {s.name: s for s in app.store.list_steps(run.id)}
    assert steps["tool:gate:g1"].status == "completed"
    assert (steps["llm:turn:1"].status, steps["llm:turn:1"].attempt) == ("failed", 1)
    assert [m.role for m in app.threads.messages("t1", viewer="u7")] == ["user", "assistant", "tool"]
    with pytest.raises(QuotaExceededError):
        app.agents.spender.run(input="again", thread_key="t2", owner="u7", tenant="acme")
    assert app.store.get_thread("t2") is None
    other = app.agents.spender.run(input="go", thread_key="t3", owner="u9", tenant="globex")
    fleet.wait_for("the other tenant's run to reach its tool", lambda: fleet.redis.llen(key("entered")) >= 2)
    assert app.store.get_run(other.id) is not None
