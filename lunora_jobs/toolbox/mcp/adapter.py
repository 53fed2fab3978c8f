"""``mcp_tools``: the tools an MCP server lists, as ``ToolDefinition``\\s the engine runs as durable steps.

The server is listed once, when ``mcp_tools`` is called (at declaration: the agent's tool namespace
and the schemas the model sees are fixed there, in every process that imports the agent). Each call
the model makes is a ``tool:<name>:<call_id>`` step like any other: memoized in the ledger, so a
replay or a redelivered task never calls the server again for a finished call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from lunora_jobs.errors import (
    InvalidToolError,
    McpConnectionError,
    McpToolError,
    McpToolNotFoundError,
)
from lunora_jobs.toolbox.mcp.connection import McpConnection, connection_for
from lunora_jobs.toolbox.mcp.results import call_output, input_schema
from lunora_jobs.toolbox.mcp.server import McpServer
from lunora_jobs.tools import TOOL_NAME, NeedsApproval, ToolContext, ToolDefinition, define_tool

_LIST_PAGES = 100  # a server whose cursor never ends cannot hang a declaration


def mcp_tools(
    server: McpServer | str,
    *,
    only: Collection[str] | None = None,
    prefix: str = "",
    needs_approval: NeedsApproval | Mapping[str, NeedsApproval] = False,
) -> list[ToolDefinition]:
    """Adapt the tools ``server`` lists (``McpServer.stdio(...)``, ``McpServer.http(url)``, or a URL).

    ``only`` keeps the named tools (a name the server does not list raises ``McpToolNotFoundError``);
    ``prefix`` namespaces them (``prefix="docs_"``: ``search`` becomes ``docs_search``); names with
    characters a model provider refuses have them replaced by ``_``. ``needs_approval`` gates every
    tool, or per tool when a dict keyed by the server's tool names. The model's input is validated
    against the server's input schema before the call; a server's error result reaches the model as
    the call's error (``McpToolError``), and a broken connection is retried as a failed step.

    Example::

        docs = McpServer.stdio("python", ["docs_server.py"])
        agent = define_agent(name="helper", tools=mcp_tools(docs, only=["search"], prefix="docs_"))
    """
    if isinstance(server, str):
        server = McpServer.http(server)
    if not isinstance(server, McpServer):
        raise InvalidToolError(
            f"mcp_tools: {server!r} is not a server; pass McpServer.stdio(...) or McpServer.http(url)."
        )
    if not isinstance(prefix, str):
        raise InvalidToolError(f"mcp_tools: prefix must be a str, got {type(prefix).__name__}.")
    listed = _list_tools(server)
    by_name = {tool.name: tool for tool in listed}
    wanted = list(by_name) if only is None else _check_only(server, only, by_name)
    approvals = needs_approval if isinstance(needs_approval, Mapping) else None
    if approvals is not None:
        _check_only(server, approvals, by_name)
    result: list[ToolDefinition] = []
    seen: dict[str, str] = {}
    for remote in wanted:
        tool = by_name[remote]
        name = _local_name(prefix, remote)
        if name in seen:
            raise InvalidToolError(
                f"mcp_tools: the {server.describe()} tools {seen[name]!r} and {remote!r} both become "
                f"{name!r}; pass only= to keep one of them."
            )
        seen[name] = remote
        gate = approvals.get(remote, False) if approvals is not None else needs_approval
        result.append(define_tool(
            name,
            description=tool.description or tool.title or f"The MCP tool {remote!r}.",
            input_schema=input_schema(server, remote, tool.input_schema),
            execute=_caller(server, remote),
            needs_approval=gate,  # type: ignore[arg-type]  # a Mapping was resolved above
        ))
    return result


def _list_tools(server: McpServer) -> list[Any]:
    """Every tool the server lists (all pages), on a session opened for the listing and closed after
    it: a worker that forks after importing the agent must not share its parent's session."""
    conn = McpConnection(server)
    try:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = conn.request(_lister(cursor))
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise McpConnectionError(
            f"The MCP {server.describe()} listed more than {_LIST_PAGES} pages of tools; pass only= "
            "after checking its listing by hand."
        )
    except McpConnectionError:
        raise
    except Exception as exc:  # the SDK's MCPError: the server refused the listing
        raise McpConnectionError(
            f"The MCP {server.describe()} refused to list its tools: {exc}."
        ) from exc
    finally:
        conn.close()


def _lister(cursor: str | None) -> Callable[[Any], Awaitable[Any]]:
    return lambda client: client.list_tools(cursor=cursor)


def _check_only(server: McpServer, names: Collection[str], by_name: Mapping[str, Any]) -> list[str]:
    if isinstance(names, str):
        raise InvalidToolError(f"mcp_tools: only= takes a list of tool names, not the str {names!r}.")
    missing = [n for n in names if n not in by_name]
    if missing:
        raise McpToolNotFoundError(
            f"mcp_tools: the {server.describe()} lists no tool {', '.join(map(repr, missing))}; "
            f"it lists: {', '.join(sorted(by_name)) or '(none)'}."
        )
    return list(dict.fromkeys(names))


def _local_name(prefix: str, remote: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", prefix + remote)
    if not TOOL_NAME.match(name):
        raise InvalidToolError(
            f"mcp_tools: the tool name {name!r} (from {remote!r}) is longer than 64 characters; "
            "use a shorter prefix, or only= to leave the tool out."
        )
    return name


def _caller(server: McpServer, remote: str) -> Callable[[dict[str, Any], ToolContext], Any]:
    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        conn = connection_for(server)
        try:
            result = conn.request(lambda client: client.call_tool(remote, input))
        except McpConnectionError:
            raise
        except Exception as exc:  # the SDK's MCPError: a JSON-RPC error answer (unknown tool, bad params)
            raise McpToolError(f"the MCP tool {remote!r} refused the call: {exc}") from exc
        return call_output(remote, result)

    execute.__name__ = re.sub(r"\W", "_", remote)
    return execute
