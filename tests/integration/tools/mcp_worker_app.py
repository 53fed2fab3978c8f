"""The app the MCP real-worker test runs (``LUNORA_APP=mcp_worker_app:build_app``, this folder on
PYTHONPATH): one agent whose tools come from the test MCP server over stdio, driven by a script that
calls two of them in parallel. ``MCP_CALL_LOG`` and ``MCP_PID_FILE`` (set by the test) are handed to
the server, which appends every call and its own process id to them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lunora_jobs import McpServer, define_agent, mcp_tools
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_calls_turn

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def build_app() -> Any:
    """A ``Lunora`` app on the environment, its MCP server listed once, here."""
    from lunora_jobs.runtime import Lunora

    server = McpServer.stdio(sys.executable, [SERVER], env={
        "MCP_CALL_LOG": os.environ["MCP_CALL_LOG"], "MCP_PID_FILE": os.environ["MCP_PID_FILE"]})
    agent = define_agent(
        name="mcp_fleet", model=ScriptedModel([
            tool_calls_turn([("w1", "m_add", {"a": 20, "b": 22}), ("w2", "m_shout", {"text": "fleet"})]),
            final_turn("both answered"),
        ]),
        tools=mcp_tools(server, only=["add", "shout"], prefix="m_"), step_timeout_s=60,
    )
    return Lunora.from_env(agents=[agent], redis_prefix=os.environ["MCP_FLEET_PREFIX"])
