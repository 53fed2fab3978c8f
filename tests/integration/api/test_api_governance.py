"""Governance and action-proposal routes: what a caller reads and decides follows from its verified
token alone (subject, admin, tenant); no credential is a 401; tenants are isolated both ways.

The API is served in this process (uvicorn on a thread) over an embedded app on SQLite with in-process
dispatch: a run started through the API has finished when the request returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from lunora_jobs import Lunora, Quota, define_agent
from lunora_jobs.api import BearerTokenAuthenticator, create_app
from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.testing import serve_in_thread
from lunora_jobs.client import AsyncClient, Client
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolSpec, Usage
from lunora_jobs.store.records import UsageEntry
from lunora_jobs.tools import ToolContext, define_tool

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"
IDENTITIES = {
    "alice": Identity("alice", tenant="acme"), "carol": Identity("carol", tenant="acme"),
    "bob": Identity("bob", tenant="globex"), "acme-admin": Identity("acme-admin", admin=True, tenant="acme"),
    "ops": Identity("ops", admin=True), "dave": Identity("dave"),
}


class ChargeModel:
    """``charge <n>`` calls the gated ``charge_card``; anything else is answered. 100 tokens a turn."""

    name = "governance-test-model"

    def generate(self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
                 tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None) -> ModelTurn:
        text = str([m for m in messages if m.get("role") == "user"][-1].get("content"))
        if messages[-1].get("role") == "tool":
            return ModelTurn(text=f"saw: {messages[-1].get('content')}", usage=Usage(100, 0))
        if text.startswith("charge "):
            amount = float(text.split()[1])
            return ModelTurn(tool_calls=[ToolCall(f"charge-{amount:g}", "charge_card", {"amount": amount})],
                             usage=Usage(100, 0))
        return ModelTurn(text=f"answer to {text}", usage=Usage(100, 0))


@pytest.fixture
def served(sqlite_url: str) -> Iterator[tuple[str, Lunora, list[str]]]:
    charges: list[str] = []

    def charge(args: dict[str, Any], ctx: ToolContext) -> str:
        charges.append(ctx.idempotency_key)
        return f"charged {args['amount']:g}"

    tool = define_tool(name="charge_card", description="Charge the card.", execute=charge,
                       input_schema={"type": "object", "properties": {"amount": {"type": "number"}},
                                     "required": ["amount"]},
                       needs_approval=lambda i: i["amount"] > 5000)
    agent = define_agent(name="payer", instructions="Test.", model=ChargeModel(), tools=[tool],
                         action_approval_mode="independent")
    # A hook that lets anyone act: what keeps tenants apart below is the tenant scope, not the hook.
    app = Lunora([agent], database_url=sqlite_url, authorize_action=lambda actor, proposal: True,
                 quotas=[Quota("tenant", tokens=1000), Quota("actor", tokens=50_000)])
    app.store.ensure_tables()
    api = create_app(app, BearerTokenAuthenticator({f"tok-{name}": who for name, who in IDENTITIES.items()}))
    try:
        with serve_in_thread(api) as url:
            yield url, app, charges
    finally:
        app.close()


def _as(url: str, name: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer tok-{name}"}, timeout=30)


def test_usage_and_quota_reads_follow_the_verified_identity(served: tuple[str, Lunora, list[str]]) -> None:
    url, app, _ = served
    alice, carol, bob = _as(url, "alice"), _as(url, "carol"), _as(url, "bob")
    admin, ops, dave = _as(url, "acme-admin"), _as(url, "ops"), _as(url, "dave")
    for who, thread in ((alice, "a1"), (carol, "c1"), (bob, "b1"), (dave, "d1")):
        assert who.post("/runs", json={"agent": "payer", "input": "hello", "thread_key": thread}
                        ).status_code == 202
    assert alice.get("/session").json()["tenant"] == "acme" and ops.get("/session").json()["tenant"] is None
    assert {r.owner: r.tenant for r in app.store.list_runs()} == {
        "alice": "acme", "carol": "acme", "bob": "globex", "dave": None}

    def keys(client: httpx.Client, **params: str) -> list[Any]:
        answer = client.get("/governance/usage", params=params)
        assert answer.status_code == 200, answer.text
        return [(g["key"], g["total_tokens"]) for g in answer.json()["groups"]]

    assert keys(alice, group_by="actor") == [("alice", 100)]           # her own usage only
    assert keys(alice, group_by="tenant") == [("acme", 100)]
    assert keys(admin, group_by="actor") == [("alice", 100), ("carol", 100)]  # the tenant, every actor
    assert keys(ops, group_by="tenant") == [(None, 100), ("acme", 200), ("globex", 100)]
    assert keys(dave) == [(None, 100)]
    refusals = ((alice, {"tenant": "globex"}), (bob, {"tenant": "acme"}), (alice, {"actor": "bob"}),
                (admin, {"tenant": "globex"}), (dave, {"tenant": "acme"}))
    for client, params in refusals:
        refused = client.get("/governance/usage", params=params)
        assert refused.status_code == 403, (params, refused.text)
        assert refused.headers["content-type"] == PROBLEM
    assert httpx.get(f"{url}/governance/usage").status_code == 401
    assert httpx.get(f"{url}/governance/quota", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert alice.get("/governance/usage", params={"since": "yesterday"}).status_code == 422

    mine = alice.get("/governance/quota").json()["statuses"]
    assert [(s["scope"], s["key"], s["tokens_used"], s["exceeded"]) for s in mine] == [
        ("actor", "alice", 100, False), ("tenant", "acme", 200, False)]
    assert bob.get("/governance/quota", params={"tenant": "acme"}).status_code == 403
    assert alice.get("/governance/quota", params={"tenant": "globex"}).status_code == 403
    assert admin.get("/governance/quota", params={"actor": "alice"}).status_code == 403
    both = ops.get("/governance/quota", params={"actor": "bob", "tenant": "acme"}).json()["statuses"]
    assert [(s["scope"], s["key"]) for s in both] == [("actor", "bob"), ("tenant", "acme")]

    app.store.record_usage(UsageEntry(actor="carol", tenant="acme", model="m", input_tokens=800))
    refused = alice.post("/runs", json={"agent": "payer", "input": "hello", "thread_key": "a2"})
    assert refused.status_code == 429 and refused.json()["type"].endswith("quota-exceeded"), refused.text
    assert "tenant 'acme': 1000 of 1000 tokens" in refused.json()["detail"]
    assert app.store.get_thread("a2") is None
    assert bob.post("/runs", json={"agent": "payer", "input": "hello", "thread_key": "b2"}).status_code == 202
    assert [s["exceeded"] for s in carol.get("/governance/quota").json()["statuses"]] == [False, True]


def test_proposals_are_decided_by_the_verified_subject_inside_its_tenant(
    served: tuple[str, Lunora, list[str]],
) -> None:
    url, app, charges = served
    alice, carol, bob, ops = _as(url, "alice"), _as(url, "carol"), _as(url, "bob"), _as(url, "ops")
    assert alice.post("/runs", json={"agent": "payer", "input": "charge 9000", "thread_key": "pa"}
                      ).status_code == 202
    assert bob.post("/runs", json={"agent": "payer", "input": "charge 7000", "thread_key": "pb"}
                    ).status_code == 202
    [mine] = alice.get("/threads/pa/proposals").json()["proposals"]
    assert (mine["tool_name"], mine["input"], mine["status"]) == (
        "charge_card", {"amount": 9000.0}, "pending")
    [theirs] = bob.get("/threads/pb/proposals").json()["proposals"]
    # Tenants are apart both ways, even under a hook that lets anyone act.
    assert bob.get("/threads/pa/proposals").json() == {"proposals": []}
    assert alice.get("/threads/pb/proposals").json() == {"proposals": []}
    assert ops.get("/threads/pa/proposals").json() == {"proposals": []}  # the operator has no tenant
    for client, key, pid in ((bob, "pa", mine["id"]), (alice, "pb", theirs["id"])):
        hidden = client.get(f"/threads/{key}/proposals/{pid}")
        missing = client.get(f"/threads/{key}/proposals/x")
        assert hidden.status_code == missing.status_code == 404
        assert client.post(f"/threads/{key}/proposals/{pid}/approve").status_code == 404
    assert charges == []
    # carol is in alice's tenant, and the hook lets anyone act
    assert carol.get(f"/threads/pa/proposals/{mine['id']}").json()["id"] == mine["id"]
    decided = alice.post(f"/threads/pa/proposals/{mine['id']}/approve", json={"reason": "ok"})
    assert decided.status_code == 200 and decided.json() == {"result": "applied"}, decided.text
    assert alice.post(f"/threads/pa/proposals/{mine['id']}/approve").json() == {"result": "unchanged"}
    assert alice.post(f"/threads/pa/proposals/{mine['id']}/reject").status_code == 409
    app.work_proposals()
    done = alice.get(f"/threads/pa/proposals/{mine['id']}").json()
    assert (done["status"], done["decided_by"], done["result"]) == ("succeeded", "alice", "charged 9000")
    assert len(charges) == 1
    # The Python clients (sync and asyncio) speak the same routes.
    with Client(url, token="tok-bob") as sync_bob:
        [pending] = sync_bob.proposals("pb", decision="pending")
        assert pending["id"] == theirs["id"] and sync_bob.proposals("pa") == []
        assert sync_bob.reject_proposal("pb", theirs["id"], reason="no") == "applied"
        assert [g["key"] for g in sync_bob.usage("tenant")] == ["globex"]
        assert [(s["scope"], s["key"]) for s in sync_bob.quota()] == [("actor", "bob"), ("tenant", "globex")]

    async def as_alice() -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
        async with AsyncClient(url, token="tok-alice") as client:
            return (await client.proposals("pa"), await client.usage("actor", since="2000-01-01T00:00:00Z"),
                    await client.approve_proposal("pa", mine["id"]))

    seen, used, again = asyncio.run(as_alice())
    assert [p["status"] for p in seen] == ["succeeded"] and [g["key"] for g in used] == ["alice"]
    assert again == "unchanged"
    assert len(charges) == 1
    assert alice.get("/threads/pa/proposals", params={"decision": "approved"}).json()["proposals"][0]["id"] \
        == mine["id"]
