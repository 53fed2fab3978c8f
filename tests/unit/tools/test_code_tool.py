"""code_tool: a script of tool calls with $from references, interpreted (never evaluated), each call
memoized under its own key <step>/<id> so a crash between calls re-runs no finished call; every bad
script is a tool error the model reads; each gated call waits for a decision of its own."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs import ToolContext, code_tool, define_agent, tool
from lunora_jobs.errors import InvalidToolError
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.testing import FakeClock, agent_harness, final_turn, tool_call_turn

RAN: list[tuple[str, Any, str]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


@tool
def find_user(email: str, ctx: ToolContext) -> dict[str, Any]:
    """Look up a user by email."""
    RAN.append(("find_user", email, ctx.idempotency_key))
    return {"id": "u-7", "email": email, "tags": ["vip", "beta"]}


@tool
def recent_orders(user_id: str, ctx: ToolContext) -> list[dict[str, Any]]:
    """A user's recent orders."""
    RAN.append(("recent_orders", user_id, ctx.idempotency_key))
    return [{"order": "o-1", "total": 30}, {"order": "o-2", "total": 12}]


@tool(needs_approval=lambda i: i["amount"] > 100)
def refund(order: str, amount: int, ctx: ToolContext) -> str:
    """Refund an order."""
    RAN.append(("refund", order, ctx.idempotency_key))
    return f"refunded {amount} on {order}"


@tool
def total(orders: list[dict[str, Any]], ctx: ToolContext) -> int:
    """Sum the orders' totals."""
    RAN.append(("total", len(orders), ctx.idempotency_key))
    return sum(o["total"] for o in orders)


TOOLS = {"find_user": find_user, "recent_orders": recent_orders, "refund": refund, "total": total}
SCRIPT = [
    {"id": "u", "tool": "find_user", "input": {"email": "ada@example.com"}},
    {"id": "o", "tool": "recent_orders", "input": {"user_id": {"$from": "u", "$path": "id"}}},
    {"id": "r", "tool": "refund", "input": {"order": "o-1", "amount": {"$from": "o", "$path": "0.total"}}},
]


def _tool_results(harness: Any, key: str) -> list[tuple[str, bool]]:
    return [(m.content, bool((m.metadata or {}).get("is_error"))) for m in harness.messages(key)
            if m.role == "tool"]


def test_a_three_step_script_feeds_outputs_forward_with_a_key_per_call() -> None:
    agent = define_agent(name="analyst", model="offline", tools=[code_tool(TOOLS, max_steps=4)])
    harness = agent_harness(agent, script=[tool_call_turn("call_1", "code", {"steps": SCRIPT}),
                                           final_turn("done")])
    result = harness.run(input="refund Ada's last order", thread_key="c1")
    assert result.stopped is None  # refund's gate reads an amount only known when the script runs
    pending = harness.app.approvals.pending("c1", trusted=True)
    assert [(p.tool_call_id, p.tool_name, p.input) for p in pending] == [
        ("call_1.r", "refund", SCRIPT[2]["input"])]
    harness.resolve("c1", "call_1.r", approve=True)
    result = harness.result(result.run_id)
    assert result.text == "done"
    assert RAN == [
        ("find_user", "ada@example.com", "tool:code:call_1/u"),
        ("recent_orders", "u-7", "tool:code:call_1/o"),
        ("refund", "o-1", "tool:code:call_1/r"),
    ]
    step = next(s for s in harness.steps(result.run_id) if s.name == "tool:code:call_1")
    assert step.result["output"]["final"] == "refunded 30 on o-1"
    assert step.result["output"]["outputs"]["o"][1] == {"order": "o-2", "total": 12}
    names = {s.name: s.status for s in harness.steps(result.run_id)}
    assert {n: names[n] for n in names if "/" in n} == {
        "tool:code:call_1/u": "completed", "tool:code:call_1/o": "completed",
        "tool:code:call_1/r": "completed",
    }


class _Crash(BaseException):
    """Stands for the worker process dying: nothing below the engine catches it, nothing is recorded."""


def test_a_crash_between_calls_reruns_no_finished_call() -> None:
    crashed: list[bool] = []

    @tool
    def flaky_orders(user_id: str, ctx: ToolContext) -> list[dict[str, Any]]:
        """A user's recent orders (the worker dies the first time)."""
        if not crashed:
            crashed.append(True)
            raise _Crash()
        return recent_orders.execute({"user_id": user_id}, ctx)

    tools = {**TOOLS, "recent_orders": flaky_orders}
    agent = define_agent(name="analyst2", model="offline", tools=[code_tool(tools)], step_timeout_s=30)
    script = [*SCRIPT[:2], {"id": "t", "tool": "total", "input": {"orders": {"$from": "o"}}}]
    clock = FakeClock()
    harness = agent_harness(agent, store=InMemoryStore(clock=clock), script=[
        tool_call_turn("call_1", "code", {"steps": script}), final_turn("done"),
    ])
    with pytest.raises(_Crash):
        harness.run(input="refund", thread_key="c2")
    assert [r[0] for r in RAN] == ["find_user"]
    [run] = harness.store.list_runs()
    clock.advance(10 * 60_000)  # the dead worker's lease runs out; the sweep re-dispatches the step
    harness.app.sweep(grace_ms=0)
    assert harness.result(run.id).text == "done"
    assert [r[0] for r in RAN] == ["find_user", "recent_orders", "total"]  # find_user ran once
    step = next(s for s in harness.steps(run.id) if s.name == "tool:code:call_1")
    assert step.attempt == 2 and step.result["output"]["final"] == 42


@pytest.mark.parametrize(("steps", "expected"), [
    ([{"id": "a", "tool": "nope", "input": {}}],
     "step 'a': unknown tool 'nope'. Tools: find_user, recent_orders, refund, total"),
    ([{"id": "a", "tool": "recent_orders", "input": {"user_id": {"$from": "zz"}}}],
     "step 'a' references 'zz', which is not a step of this script"),
    ([{"id": "a", "tool": "recent_orders", "input": {"user_id": {"$from": "b"}}},
      {"id": "b", "tool": "recent_orders", "input": {"user_id": {"$from": "a"}}}],
     "the steps reference each other in a cycle: a -> b -> a"),
    ([{"id": "a", "tool": "recent_orders", "input": {"user_id": {"$from": "a"}}}],
     "the steps reference each other in a cycle: a -> a"),
    ([{"id": "a", "tool": "recent_orders", "input": {"user_id": {"$from": "b"}}},
      {"id": "b", "tool": "find_user", "input": {"email": "x"}}],
     "step 'a' references 'b', which runs later"),
    ([{"id": f"s{i}", "tool": "find_user", "input": {"email": "x"}} for i in range(4)],
     "the script has 4 steps; at most 3 are allowed"),
    ([{"id": "u", "tool": "find_user", "input": {"email": "x"}},
      {"id": "o", "tool": "recent_orders", "input": {"user_id": {"$from": "u", "$path": "tags.5"}}}],
     "step 'o': the output of 'u' has nothing at $path 'tags.5' (no '5' in a list of 2 items)"),
    ([{"id": "u", "tool": "find_user", "input": {"email": 5}}],
     "step 'u': Invalid input for tool 'find_user': email: 5 is not of type 'string'"),
    ([{"id": "a", "tool": "find_user", "input": {"email": "x"}}, {"id": "a", "tool": "find_user",
                                                                    "input": {"email": "y"}}],
     "two steps have the id 'a'"),
])
def test_a_bad_script_is_an_error_the_model_reads(steps: list[dict[str, Any]], expected: str) -> None:
    agent = define_agent(name="analyst3", model="offline", max_attempts=3,
                         tools=[code_tool(TOOLS, max_steps=3, name="script")])
    harness = agent_harness(agent, script=[tool_call_turn("call_1", "script", {"steps": steps}),
                                           final_turn("fixed")])
    result = harness.run(input="go", thread_key="c3")
    assert result.text == "fixed"
    [(content, is_error)] = _tool_results(harness, "c3")
    assert is_error and expected in content, content
    ran = [r for r in RAN if r[1] == "u-7" or r[0] != "find_user"]
    assert ran == []  # nothing that reads another step ran; the checks come before the first call


def test_each_gated_call_waits_for_a_decision_of_its_own() -> None:
    agent = define_agent(name="analyst4", model="offline", tools=[code_tool(TOOLS)])
    gated = [*SCRIPT[:2], {"id": "r1", "tool": "refund", "input": {"order": "o-1", "amount": 500}},
             {"id": "small", "tool": "refund", "input": {"order": "o-3", "amount": 5}},
             {"id": "r2", "tool": "refund", "input": {"order": "o-2", "amount": 600}}]
    harness = agent_harness(agent, script=[tool_call_turn("call_1", "code", {"steps": gated}),
                                           final_turn("one refund was refused")])
    result = harness.run(input="refund 500 and 600", thread_key="c4")
    assert result.stopped is None and RAN == []  # waiting: nothing runs before every gate is decided
    pending = harness.app.approvals.pending("c4", trusted=True)
    assert [(p.tool_call_id, p.tool_name, p.input) for p in pending] == [
        ("call_1.r1", "refund", {"order": "o-1", "amount": 500}),
        ("call_1.r2", "refund", {"order": "o-2", "amount": 600}),
    ]  # the 5 refund is under its gate: no decision asked
    assert harness.resolve("c4", "call_1.r1", approve=True) == "applied"
    assert harness.result(result.run_id).status == "awaiting_input" and RAN == []
    assert [p.tool_call_id for p in harness.app.approvals.pending("c4", trusted=True)] == ["call_1.r2"]
    assert harness.resolve("c4", "call_1.r2", approve=False, reason="too much") == "applied"
    assert harness.result(result.run_id).text == "one refund was refused"
    assert [(r[0], r[1]) for r in RAN] == [("find_user", "ada@example.com"), ("recent_orders", "u-7"),
                                           ("refund", "o-1"), ("refund", "o-3")]
    [(content, is_error)] = _tool_results(harness, "c4")
    assert is_error and "step 'r2' (refund) was rejected by a human reviewer: too much" in content
    assert '"r1": "refunded 500 on o-1"' in content  # the model sees what did run
    tool_def = code_tool(TOOLS)
    assert tool_def.approval_parts is not None
    literal = [{"id": "r", "tool": "refund", "input": {"order": "o", "amount": 30}}]
    assert tool_def.approval_parts({"steps": literal}) == []  # 30 is under the gate
    # Its amount is known only at run time: gated.
    assert [p["id"] for p in tool_def.approval_parts({"steps": SCRIPT})] == ["r"]


def test_code_tool_declaration_errors() -> None:
    with pytest.raises(InvalidToolError):
        code_tool({})
    with pytest.raises(InvalidToolError):
        code_tool(TOOLS, max_steps=0)
    with pytest.raises(InvalidToolError):
        code_tool({"x": "not a tool"})  # type: ignore[dict-item]
