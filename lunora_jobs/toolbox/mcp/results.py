"""Converting between MCP's shapes and the engine's: input schemas in, call results out."""

from __future__ import annotations

from typing import Any

from lunora_jobs.errors import InvalidToolError, McpToolError
from lunora_jobs.toolbox.mcp.server import McpServer


def input_schema(server: McpServer, remote: str, schema: Any) -> dict[str, Any]:
    """The tool's JSON schema as the model sees it: an object schema (MCP requires ``type: object``
    at the root; a server that leaves out ``properties`` gets an empty map)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise InvalidToolError(
            f"mcp_tools: the {server.describe()} tool {remote!r} has an input schema that is not a JSON "
            "object schema; fix the server, or leave the tool out with only=."
        )
    converted = {"type": "object", **schema}
    converted.setdefault("properties", {})
    return converted


def call_output(remote: str, result: Any) -> Any:
    """What the model reads of a ``CallToolResult``: the structured content when the server sent it,
    else the text blocks joined (other blocks as their JSON); an error result raises ``McpToolError``."""
    blocks = list(result.content or [])
    texts = [b.text for b in blocks if getattr(b, "type", None) == "text"]
    if result.is_error:
        detail = "\n".join(texts) or "no message"
        raise McpToolError(f"the MCP tool {remote!r} failed: {detail}")
    if result.structured_content is not None:
        return result.structured_content
    if len(texts) == len(blocks):
        return "\n".join(texts)
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]
