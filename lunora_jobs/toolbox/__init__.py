"""Tools from other places: other agents (``agent_as_tool``), MCP servers (``mcp_tools``), scripts
of calls (``code_tool``), sandboxed files (``fs_tool``) and commands (``container_tool``), a guarded
browser (``browser_tool``).

Each helper returns ordinary ``ToolDefinition``\\s: every call the model makes is a durable
``tool:<name>:<call_id>`` step, memoized in the ledger like any other tool.
"""

from lunora_jobs.toolbox.browser import browser_tool
from lunora_jobs.toolbox.code import code_tool
from lunora_jobs.toolbox.delegate import agent_as_tool
from lunora_jobs.toolbox.mcp import McpServer, mcp_tools
from lunora_jobs.toolbox.sandbox import LocalDirStore, ObjectStore, S3Store, container_tool, fs_tool

__all__ = [
    "LocalDirStore", "McpServer", "ObjectStore", "S3Store", "agent_as_tool", "browser_tool", "code_tool",
    "container_tool",
    "fs_tool", "mcp_tools",
]
