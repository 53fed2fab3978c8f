"""Tools from other places: MCP servers (``mcp_tools``), scripts of calls (``code_tool``).

Each helper returns ordinary ``ToolDefinition``\\s: every call the model makes is a durable
``tool:<name>:<call_id>`` step, memoized in the ledger like any other tool.
"""

from lunora_jobs.toolbox.code import code_tool
from lunora_jobs.toolbox.mcp import McpServer, mcp_tools

__all__ = ["McpServer", "code_tool", "mcp_tools"]
