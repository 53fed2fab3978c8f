"""MCP tools as durable tool steps, against a real MCP server (the official SDK) the tests start.

Over stdio and streamable HTTP: the listing becomes tools (schemas converted, names prefixed and
made provider-safe), each call is a ``tool:<name>:<call_id>`` step memoized in the ledger (a
redelivered step never calls the server again), a server's error result reaches the model without
retries, and a server that cannot be reached or dies is a named error (retried on a new session).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from suite_settings import require_module

require_module("mcp", extra="mcp")

from mcp_support import calls, http_server, stdio_server  # noqa: E402

from lunora_jobs import define_agent  # noqa: E402
from lunora_jobs.errors import McpConnectionError, McpToolNotFoundError  # noqa: E402
from lunora_jobs.testing import agent_harness, final_turn, tool_call_turn  # noqa: E402
from lunora_jobs.toolbox import McpServer, mcp_tools  # noqa: E402

pytestmark = pytest.mark.slow


def _tool_messages(harness, key: str) -> list[tuple[str, bool]]:
    return [(m.content, bool((m.metadata or {}).get("is_error"))) for m in harness.messages(key)
            if m.role == "tool"]


@pytest.fixture(scope="module")
def call_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "calls.log"


@pytest.fixture(scope="module")
def stdio_tools(call_log: Path) -> list:
    return mcp_tools(stdio_server(call_log), prefix="m_")


def test_listing_becomes_tools_with_converted_schemas(stdio_tools: list) -> None:
    by_name = {t.name: t for t in stdio_tools}
    assert set(by_name) == {"m_add", "m_shout", "m_docs_lookup", "m_explode"}  # "docs.lookup" made safe
    add = by_name["m_add"]
    assert add.description == "Add two integers."
    assert add.input_schema["type"] == "object"
    assert add.input_schema["required"] == ["a", "b"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"


def test_a_stdio_round_trip_is_one_memoized_step(stdio_tools: list, call_log: Path) -> None:
    before = calls(call_log).count("add")
    agent = define_agent(name="mcp_math", model="offline", tools=stdio_tools)
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "m_add", {"a": 2, "b": 40}), final_turn("42"),
    ])
    result = harness.run(input="2 + 40?", thread_key="mcp-1")
    assert result.stopped == "final" and result.text == "42"
    assert _tool_messages(harness, "mcp-1") == [(json.dumps({"result": 42}), False)]
    assert calls(call_log).count("add") == before + 1
    # A redelivered task of the finished step replays its memo: the server is not called again.
    harness.app.execute_step(result.run_id, "tool:m_add:call_1")
    assert calls(call_log).count("add") == before + 1
    step = next(s for s in harness.steps(result.run_id) if s.name == "tool:m_add:call_1")
    assert step.status == "completed" and step.result["output"] == {"result": 42}


def test_a_servers_error_result_reaches_the_model_without_retries(stdio_tools: list, call_log: Path) -> None:
    before = calls(call_log).count("explode")
    agent = define_agent(name="mcp_err", model="offline", tools=stdio_tools, max_attempts=3)
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "m_explode", {"reason": "boom"}), final_turn("It failed."),
    ])
    result = harness.run(input="explode", thread_key="mcp-2")
    assert result.stopped == "final"
    [(content, is_error)] = _tool_messages(harness, "mcp-2")
    assert is_error and "exploded: boom" in content and "explode" in content
    assert calls(call_log).count("explode") == before + 1  # a ToolError is not retried


def test_input_is_validated_against_the_servers_schema_before_any_call(
    stdio_tools: list, call_log: Path,
) -> None:
    before = len(calls(call_log))
    agent = define_agent(name="mcp_bad", model="offline", tools=stdio_tools)
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "m_add", {"a": "two", "b": 1}), final_turn("Sorry."),
    ])
    harness.run(input="add", thread_key="mcp-3")
    [(content, is_error)] = _tool_messages(harness, "mcp-3")
    assert is_error and "Invalid input for tool 'm_add'" in content
    assert len(calls(call_log)) == before


def test_only_keeps_named_tools_and_refuses_unknown_names(call_log: Path) -> None:
    server = stdio_server(call_log)
    kept = mcp_tools(server, only=["docs.lookup"], prefix="kb_")
    assert [t.name for t in kept] == ["kb_docs_lookup"]
    with pytest.raises(McpToolNotFoundError) as err:
        mcp_tools(server, only=["add", "subtract"])
    assert "'subtract'" in str(err.value) and "add, docs.lookup, explode, shout" in str(err.value)


def test_needs_approval_per_tool_gates_the_step(call_log: Path) -> None:
    tools = mcp_tools(stdio_server(call_log), only=["add", "shout"], needs_approval={"shout": True})
    gates = {t.name: t.requires_approval({}) for t in tools}
    assert gates == {"add": False, "shout": True}
    agent = define_agent(name="mcp_gate", model="offline", tools=tools)
    before = calls(call_log).count("shout")
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "shout", {"text": "hi"}), final_turn("HI"),
    ])
    result = harness.run(input="shout", thread_key="mcp-4")
    assert result.stopped is None and calls(call_log).count("shout") == before  # waiting for a human
    harness.resolve("mcp-4", "call_1", approve=True)
    assert harness.result(result.run_id).text == "HI"
    assert calls(call_log).count("shout") == before + 1


def test_a_streamable_http_round_trip(tmp_path: Path) -> None:
    log = tmp_path / "http.log"
    with http_server(log) as server:
        tools = mcp_tools(server, only=["shout"])
        agent = define_agent(name="mcp_http", model="offline", tools=tools)
        harness = agent_harness(agent, script=[
            tool_call_turn("call_1", "shout", {"text": "over http"}), final_turn("done"),
        ])
        result = harness.run(input="shout", thread_key="mcp-5")
        assert result.text == "done"
        assert _tool_messages(harness, "mcp-5") == [(json.dumps({"result": "OVER HTTP"}), False)]
        assert calls(log) == ["shout"]


def test_a_server_that_cannot_start_or_be_reached_is_a_named_error() -> None:
    with pytest.raises(McpConnectionError) as err:
        mcp_tools(McpServer.stdio("/nonexistent/mcp-server", ["--flag"], timeout_s=20))
    assert "/nonexistent/mcp-server --flag" in str(err.value)
    from ports import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(McpConnectionError) as err:
        mcp_tools(McpServer.http(url, timeout_s=20))
    assert url in str(err.value)


def test_a_server_killed_between_calls_is_reconnected_on_the_retry(tmp_path: Path) -> None:
    log, pids = tmp_path / "calls.log", tmp_path / "pids"
    tools = mcp_tools(stdio_server(log, pids), only=["add"])
    agent = define_agent(name="mcp_kill", model="offline", tools=tools, max_attempts=3)
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "add", {"a": 1, "b": 1}),
        tool_call_turn("call_2", "add", {"a": 2, "b": 2}),
        final_turn("done"),
    ])
    first = harness.run(input="add", thread_key="mcp-6")
    assert first.text == "done"
    assert calls(log) == ["add", "add"]
    # The session the calls used belongs to the last process started (the listing's has exited).
    os.kill(int(pids.read_text().split()[-1]), signal.SIGKILL)
    harness2 = agent_harness(agent, script=[tool_call_turn("call_3", "add", {"a": 3, "b": 3}),
                                            final_turn("again")])
    second = harness2.run(input="add", thread_key="mcp-7")
    assert second.text == "again"
    assert _tool_messages(harness2, "mcp-7") == [(json.dumps({"result": 6}), False)]
    step = next(s for s in harness2.steps(second.run_id) if s.name == "tool:add:call_3")
    assert step.attempt >= 1 and calls(log) == ["add", "add", "add"]


def test_mcp_tools_rejects_what_is_not_a_server() -> None:
    from lunora_jobs.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        mcp_tools(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        McpServer.http("ftp://example.invalid/mcp")
    with pytest.raises(ConfigurationError):
        McpServer.stdio(sys.executable, "server.py")  # type: ignore[arg-type]
