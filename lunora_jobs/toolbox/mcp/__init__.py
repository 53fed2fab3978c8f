"""MCP servers' tools as durable tool steps, through the official ``mcp`` SDK (stdio and streamable HTTP).

Example::

    docs = McpServer.stdio("python", ["docs_server.py"])
    agent = define_agent(name="helper", tools=mcp_tools(docs, prefix="docs_"))
"""

from lunora_jobs.toolbox.mcp.adapter import mcp_tools
from lunora_jobs.toolbox.mcp.server import McpServer

__all__ = ["McpServer", "mcp_tools"]
