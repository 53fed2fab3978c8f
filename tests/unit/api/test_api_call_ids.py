"""A tool call's id is the provider's text: whatever it holds, its approval is reachable over HTTP,
and an id no call can have is "not pending" (404), never a schema refusal (422).

The regression: schemathesis (seed 43458109928727907985920047247734487282) sent ``2%0E[htoY`` as a
call id the schema allowed; the API answered 422 from a character-class pattern the schema published
but a path parameter cannot keep (the client's percent-encoding is the URL's, not the id's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lunora_jobs import Lunora, define_agent, define_tool
from lunora_jobs.api import BearerTokenAuthenticator, create_app
from lunora_jobs.api.testing import serve_in_thread
from lunora_jobs.client import Client
from lunora_jobs.models import ScriptedModel
from lunora_jobs.testing import final_turn, tool_call_turn

ODD_ID = "call 7%2F?#\u00e9\x0e"
"""Space, a literal '%2F', URL delimiters, non-ASCII and a control character: all the provider's."""

AMOUNT = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    charge = define_tool(name="charge", description="Charge.", input_schema=AMOUNT,
                         execute=lambda args, ctx: f"charged {args['amount']:g}", needs_approval=True)
    agent = define_agent(name="payer", instructions="Pay.", model="offline", tools=[charge])
    app = Lunora(agents=[agent], database_url=f"sqlite:///{tmp_path}/ids.db",
                 model=ScriptedModel([tool_call_turn(ODD_ID, "charge", {"amount": 12}), final_turn("paid")]))
    app.store.ensure_tables()
    try:
        with serve_in_thread(create_app(app, BearerTokenAuthenticator({"tok": "alice"}))) as url:
            yield url
    finally:
        app.close()


def test_a_call_id_with_any_characters_can_be_approved(served: str) -> None:
    client = Client(served, token="tok")
    run = client.run("payer", "pay", thread_key="t-odd")  # in-process dispatch: parked when it returns
    assert [p.tool_call_id for p in client.approvals("t-odd")] == [ODD_ID]
    assert client.approve("t-odd", ODD_ID) == "applied"
    result = client.wait(run.id)
    assert result.text == "paid"
    tool = [m for m in client.messages("t-odd") if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool] == [(ODD_ID, "charged 12")]


@pytest.mark.parametrize("raw", ["2%0E[htoY", "%00", "x" * 255])
def test_an_id_no_call_has_is_not_pending(served: str, raw: str) -> None:
    Client(served, token="tok").run("payer", "pay", thread_key="t-404")
    response = httpx.post(f"{served}/threads/t-404/approvals/{raw}/approve", json=None,
                          headers={"Authorization": "Bearer tok"}, timeout=10)
    assert response.status_code == 404, response.text
    body: dict[str, Any] = response.json()
    assert response.headers["content-type"].startswith("application/problem+json")
    assert body["status"] == 404 and "no pending approval" in body["detail"]


def test_the_published_call_id_promises_no_character_set(served: str) -> None:
    schema = httpx.get(f"{served}/openapi.json", timeout=10).json()
    for verb in ("approve", "reject"):
        params = schema["paths"][f"/threads/{{key}}/approvals/{{call_id}}/{verb}"]["post"]["parameters"]
        call_id = next(p for p in params if p["name"] == "call_id")["schema"]
        assert "pattern" not in call_id and call_id["maxLength"] == 255
