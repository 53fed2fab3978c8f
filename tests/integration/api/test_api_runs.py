"""The run API through httpx against ``lunora api`` (uvicorn) on PostgreSQL + Redis + a Celery worker."""

from __future__ import annotations

import httpx
import pytest
from api_stack import ApiStack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROBLEM = "application/problem+json"


def test_run_lifecycle_approval_and_owner_isolation(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice, bob, ops = stack.client(api, "alice"), stack.client(api, "bob"), stack.client(api, "ops")

    started = alice.post("/runs", json={"agent": "support", "input": "charge 9000", "thread_key": "t-pay"})
    assert started.status_code == 202, started.text
    run_id = started.json()["id"]
    assert started.json()["thread_key"] == "t-pay"
    stack.wait_status(run_id, "awaiting_input")

    pending = alice.get("/threads/t-pay/approvals").json()["pending"]
    assert [(p["tool_call_id"], p["tool_name"], p["input"]) for p in pending] == [
        ("charge-9000", "charge_card", {"amount": 9000.0})
    ]
    # A stranger sees exactly what a missing thread looks like, on every route.
    for path in ("/threads/t-pay", "/threads/t-pay/messages", "/threads/t-pay/state",
                 "/threads/t-pay/approvals"):
        hidden, missing = bob.get(path), bob.get(path.replace("t-pay", "t-none"))
        assert hidden.status_code == missing.status_code == 404, hidden.text
        assert hidden.headers["content-type"] == missing.headers["content-type"] == PROBLEM
        shown, absent = hidden.json()["detail"], missing.json()["detail"]
        assert shown.replace("t-pay", "X") == absent.replace("t-none", "X"), (shown, absent)
    assert bob.get(f"/runs/{run_id}").status_code == 404
    assert bob.post(f"/runs/{run_id}/cancel").status_code == 404
    denied = bob.post("/threads/t-pay/approvals/charge-9000/approve")
    assert denied.status_code == 404 and denied.headers["content-type"] == PROBLEM
    # Nor may a stranger start a run on it: the thread is someone else's, so it does not exist for bob.
    assert bob.post("/threads/t-pay/runs", json={"agent": "support", "input": "hi"}).status_code == 404
    assert stack.redis.llen(f"{stack.prefix}:charges") == 0

    decided = alice.post("/threads/t-pay/approvals/charge-9000/approve")
    assert decided.status_code == 200 and decided.json() == {"result": "applied"}, decided.text
    assert alice.post("/threads/t-pay/approvals/charge-9000/approve").json() == {"result": "unchanged"}
    conflict = alice.post("/threads/t-pay/approvals/charge-9000/reject")
    assert conflict.status_code == 409 and conflict.headers["content-type"] == PROBLEM
    stack.wait_status(run_id, "completed")

    run = alice.get(f"/runs/{run_id}").json()
    assert run["status"] == "completed" and run["stopped"] == "final"
    assert run["text"] == "saw: charged 9000" and run["turns"] == 2
    assert stack.redis.llen(f"{stack.prefix}:charges") == 1
    page = alice.get("/threads/t-pay/messages", params={"limit": 2}).json()
    assert [m["role"] for m in page["messages"]] == ["user", "assistant"] and page["next_after"] == 2
    rest = alice.get("/threads/t-pay/messages", params={"after": page["next_after"]}).json()
    assert [m["role"] for m in rest["messages"]] == ["tool", "assistant"] and rest["next_after"] is None
    assert [m["seq"] for m in page["messages"] + rest["messages"]] == [1, 2, 3, 4]
    # The admin identity (the on-call engineer) sees it; the owner stays alice.
    assert ops.get("/threads/t-pay").json()["status"] == "completed"
    assert stack.app.store.get_thread("t-pay").owner == "alice"


def test_owner_comes_from_the_token_not_the_body(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice = stack.client(api, "alice")
    body = {"agent": "support", "input": "hello", "thread_key": "t-own", "owner": "bob"}
    refused = alice.post("/runs", json=body)
    assert refused.status_code == 422 and refused.headers["content-type"] == PROBLEM
    del body["owner"]
    run_id = alice.post("/runs", json=body).json()["id"]
    assert stack.wait_status(run_id, "completed").owner == "alice"
    assert stack.app.store.get_thread("t-own").owner == "alice"


def test_cancel_a_running_run(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice = stack.client(api, "alice")
    body = {"agent": "support", "input": "block b1", "thread_key": "t-c"}
    run_id = alice.post("/runs", json=body).json()["id"]
    stack.wait_for("the block tool to run", lambda: stack.app.store.get_step(run_id, "tool:block:block-b1"))
    cancelled = alice.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json() == {"cancelled": True, "status": "cancelled"}
    assert alice.post(f"/runs/{run_id}/cancel").json() == {"cancelled": False, "status": "cancelled"}
    stack.redis.set(f"{stack.prefix}:release", "1")
    assert alice.get(f"/runs/{run_id}").json()["status"] == "cancelled"
    assert alice.get("/threads/t-c").json()["status"] == "cancelled"


def test_retry_resumes_a_failed_run_on_the_worker_from_its_failed_turn(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice, bob = stack.client(api, "alice"), stack.client(api, "bob")
    body = {"agent": "support", "input": "flaky 7", "thread_key": "t-r"}
    run_id = alice.post("/runs", json=body).json()["id"]
    failed = stack.wait_status(run_id, "failed")
    assert "HTTP 400" in (failed.error or "") and stack.redis.llen(f"{stack.prefix}:charges") == 1
    assert bob.post(f"/runs/{run_id}/retry").status_code == 404  # another owner's run does not exist
    assert alice.post("/runs/no-such-run/retry").status_code == 404
    stack.redis.set(f"{stack.prefix}:fixed", "1")
    retried = alice.post(f"/runs/{run_id}/retry")
    assert retried.status_code == 200, retried.text
    assert retried.json() == {"status": "running", "steps": ["llm:turn:1"]}
    stack.wait_status(run_id, "completed")
    run = alice.get(f"/runs/{run_id}").json()
    assert run["text"] == "saw: charged 7" and run["error"] is None
    assert stack.redis.llen(f"{stack.prefix}:charges") == 1  # the completed tool step was not run again
    steps = {s["name"]: s["attempt"] for s in alice.get(f"/runs/{run_id}/steps").json()["steps"]}
    assert steps == {"llm:turn:0": 1, "tool:charge_card:flaky-7": 1, "llm:turn:1": 1}
    again = alice.post(f"/runs/{run_id}/retry")
    assert again.status_code == 409 and again.headers["content-type"] == PROBLEM
    assert "completed, not failed" in again.json()["detail"]


def test_idempotent_start_and_conflicts(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice, bob = stack.client(api, "alice"), stack.client(api, "bob")
    body = {"agent": "support", "input": "block b2", "thread_key": "t-i"}
    first = alice.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
    again = alice.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 202 and first.json()["id"] == again.json()["id"]
    # The same key from another caller is another caller's key: it names no run of alice's.
    other = bob.post("/runs", json={"agent": "support", "input": "hello"}, headers={"Idempotency-Key": "k-1"})
    assert other.status_code == 202 and other.json()["id"] != first.json()["id"]
    busy = alice.post("/runs", json={**body, "input": "hello"})
    assert busy.status_code == 409 and busy.headers["content-type"] == PROBLEM
    assert "already has run" in busy.json()["detail"]
    stack.redis.set(f"{stack.prefix}:release", "1")
    stack.wait_status(first.json()["id"], "completed")


def test_problem_details_for_every_error(stack: ApiStack) -> None:
    api = stack.start_api()
    anon, alice = stack.client(api), stack.client(api, "alice")
    missing = anon.get("/threads/t1")
    assert missing.status_code == 401 and missing.headers["content-type"] == PROBLEM
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["type"] == "urn:lunora:problem:unauthenticated"
    wrong = anon.get("/threads/t1", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["status"] == 401
    unknown = alice.post("/runs", json={"agent": "nobody", "input": "x"})
    assert unknown.status_code == 422 and unknown.json()["type"] == "urn:lunora:problem:unknown-agent"
    invalid = alice.get("/threads/t1/messages", params={"limit": 0})
    assert invalid.status_code == 422 and invalid.json()["errors"][0]["loc"] == ["query", "limit"]
    route = alice.get("/no/such/route")
    assert route.status_code == 404 and route.headers["content-type"] == PROBLEM
    method = alice.delete("/runs")
    assert method.status_code == 405 and method.headers["content-type"] == PROBLEM
    assert alice.get("/agents").json()["agents"][0]["name"] == "support"


def test_cookie_session_requires_csrf_and_same_origin(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    console = stack.client(api)
    signed = console.post("/session", json={"token": "tok-alice-0123456789"})
    assert signed.status_code == 200, signed.text
    csrf = signed.json()["csrf_token"]
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert console.get("/session").json()["subject"] == "alice"
    body = {"agent": "support", "input": "hello", "thread_key": "t-cookie"}
    no_token = console.post("/runs", json=body)
    assert no_token.status_code == 403 and no_token.json()["type"] == "urn:lunora:problem:csrf"
    forged = console.post("/runs", json=body, headers={"X-CSRF-Token": "forged"})
    assert forged.status_code == 403
    elsewhere = console.post("/runs", json=body, headers={"X-CSRF-Token": csrf, "Origin": "https://evil.example"})
    assert elsewhere.status_code == 403 and elsewhere.json()["type"] == "urn:lunora:problem:cross-origin"
    assert stack.app.store.get_thread("t-cookie") is None
    ok = console.post("/runs", json=body, headers={"X-CSRF-Token": csrf, "Origin": api.url})
    assert ok.status_code == 202, ok.text
    stack.wait_status(ok.json()["id"], "completed")
    # Login CSRF: another site cannot sign the browser in.
    assert console.post("/session", json={"token": "tok-bob-0123456789"},
                        headers={"Origin": "https://evil.example"}).status_code == 403
    assert console.delete("/session", headers={"X-CSRF-Token": csrf}).status_code == 204


def test_cors_closed_unless_configured(stack: ApiStack) -> None:
    closed = stack.start_api()
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    with stack.client(closed) as c:
        answer = c.options("/runs", headers=preflight)
        assert "access-control-allow-origin" not in answer.headers
        assert "access-control-allow-origin" not in c.get("/healthz", headers={"Origin": "https://app.example"}).headers
    opened = stack.start_api(LUNORA_API_CORS_ORIGINS="https://app.example")
    with stack.client(opened) as c:
        answer = c.options("/runs", headers=preflight)
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "https://app.example"
        other = c.options("/runs", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_runs_list_keyset_pages_filters_and_the_step_timeline(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    alice, bob, ops = stack.client(api, "alice"), stack.client(api, "bob"), stack.client(api, "ops")
    def start(client: httpx.Client, text: str, key: str) -> str:
        body = {"agent": "support", "input": text, "thread_key": key}
        return str(client.post("/runs", json=body).json()["id"])

    mine = [start(alice, "hello", f"t-l{i}") for i in range(5)]
    theirs = start(bob, "count 1", "t-b")
    for run_id in [*mine, theirs]:
        stack.wait_status(run_id, "completed")
    first = alice.get("/runs", params={"limit": 2}).json()
    assert [r["id"] for r in first["runs"]] == mine[::-1][:2] and first["next_cursor"]
    seen = [r["id"] for r in first["runs"]]
    cursor = first["next_cursor"]
    while cursor:
        page = alice.get("/runs", params={"limit": 2, "cursor": cursor}).json()
        seen += [r["id"] for r in page["runs"]]
        cursor = page["next_cursor"]
    assert seen == mine[::-1]  # alice never sees bob's run
    row = first["runs"][0]
    assert (row["agent"], row["status"], row["thread_key"]) == ("support", "completed", "t-l4")
    assert row["turns"] == 1
    assert row["usage"]["input_tokens"] == 0 and row["cost_usd"] is None
    assert [r["id"] for r in alice.get("/runs", params={"thread_key": "t-b"}).json()["runs"]] == []
    assert alice.get("/runs", params={"owner": "bob"}).status_code == 403
    assert alice.get("/runs", params={"cursor": "not a cursor"}).status_code == 422
    # The admin (on-call) view holds everyone's runs and can filter by owner.
    assert [r["id"] for r in ops.get("/runs", params={"owner": "bob"}).json()["runs"]] == [theirs]
    assert len(ops.get("/runs").json()["runs"]) == 6
    assert ops.get("/runs", params={"status": "running"}).json()["runs"] == []

    timeline = bob.get(f"/runs/{theirs}/steps").json()
    assert timeline["run"]["text"] == "counted 1"
    steps = timeline["steps"]
    assert [(s["name"], s["kind"], s["status"], s["attempt"]) for s in steps] == [
        ("llm:turn:0", "turn", "completed", 1), ("tool:tick:tick-1", "tool", "completed", 1),
        ("llm:turn:1", "turn", "completed", 1),
    ]
    assert steps[0]["summary"] == 'calls tick({"i": 1})' and steps[1]["summary"] == "tick 1"
    assert steps[1]["duration_ms"] >= 150  # the tick tool sleeps 0.2 s
    assert all(s["started_at"] <= s["finished_at"] for s in steps)
    assert alice.get(f"/runs/{theirs}/steps").status_code == 404
