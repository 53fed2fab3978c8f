"""A real MCP server for the tests, on the official SDK: ``python mcp_test_server.py`` serves stdio,
``python mcp_test_server.py --http PORT`` serves streamable HTTP on 127.0.0.1:PORT at ``/mcp``.

Every call of a tool appends a line to the file named by ``MCP_CALL_LOG`` (when set), so a test can
count how often the server really ran a tool (a replayed step must not call it again).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("lunora-test", log_level="CRITICAL")

if os.environ.get("MCP_PID_FILE"):  # lets a test kill this very process
    with open(os.environ["MCP_PID_FILE"], "a", encoding="utf-8") as pids:
        pids.write(f"{os.getpid()}\n")


def _record(name: str) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(name + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("add")
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    _record("shout")
    return text.upper()


@server.tool(name="docs.lookup")
def docs_lookup(topic: str) -> dict[str, str]:
    """Look up a topic in the docs (a name with a dot: not a valid provider tool name as it is)."""
    _record("docs.lookup")
    return {"topic": topic, "text": f"All about {topic}."}


@server.tool()
def explode(reason: str) -> str:
    """Always fails, with the given reason."""
    _record("explode")
    raise ToolError(f"exploded: {reason}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
