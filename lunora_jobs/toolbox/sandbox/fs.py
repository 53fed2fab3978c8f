"""``fs_tool``: ``ls / read / write / rm / stat`` over an object store, every path confined under a root.

The model picks ``op`` and ``path`` (and ``content`` to write); the path is checked by
``paths.confine`` and prefixed with the root, so nothing outside the root's prefix can be named, and
the local store never follows a symlink. ``write`` and ``rm`` need a human approval by default;
reads and writes have size limits. Refusals are ``ToolError``\\s: the model reads why.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from typing import Any

from lunora_jobs.config import Settings
from lunora_jobs.errors import InvalidToolError, SandboxPathError, ToolError
from lunora_jobs.toolbox._schema import op_schema
from lunora_jobs.toolbox.sandbox.paths import confine
from lunora_jobs.toolbox.sandbox.store import Entry, LocalDirStore, ObjectStore
from lunora_jobs.tools import NeedsApproval, ToolContext, ToolDefinition, define_tool

WRITING_OPS = frozenset({"write", "rm"})


def _writes(input: dict[str, Any]) -> bool:
    return input.get("op") in WRITING_OPS


def fs_tool(
    root: str,
    store: ObjectStore | str | os.PathLike[str] | None = None,
    *,
    name: str = "fs",
    needs_approval: NeedsApproval = _writes,
    max_read_bytes: int = 1_000_000,
    max_write_bytes: int = 1_000_000,
) -> ToolDefinition:
    """A file tool scoped to ``root`` (e.g. ``"agents/coder"``) in ``store``: a local directory by
    default (``./.lunora/fs`` unless you pass a path or an ``ObjectStore``).

    ``needs_approval`` defaults to gating ``write`` and ``rm``; pass ``False`` to let them run
    unattended, or a predicate over the input.

    Example::

        files = fs_tool(root="agents/coder", store="/srv/agent-files")
        coder = define_agent(name="coder", tools=[files])
    """
    try:
        root_key = confine(root)
    except SandboxPathError as exc:
        raise InvalidToolError(f"fs_tool: root {root!r} is not usable: {exc}.") from None
    if not root_key:
        raise InvalidToolError("fs_tool: root must name a folder (e.g. 'agents/coder'), not the store's top.")
    for option, value in (("max_read_bytes", max_read_bytes), ("max_write_bytes", max_write_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidToolError(f"fs_tool: {option} must be an int >= 1, got {value!r}.")
    backend = _store(store)
    ops: dict[str, Callable[[tuple[str, ...], dict[str, Any]], Any]] = {
        "ls": lambda key, _: {"entries": [_entry(e) for e in backend.list(key)]},
        "read": lambda key, _: _read(backend, key, max_read_bytes),
        "write": lambda key, input: _write(backend, key, input, max_write_bytes),
        "rm": lambda key, _: _remove(backend, key),
        "stat": lambda key, _: _entry(backend.stat(key)),
    }

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        op, path = input["op"], input.get("path", "")
        try:
            parts = confine(path)
            if not parts and op not in ("ls", "stat"):
                raise SandboxPathError(f"'{op}' needs a file path, not the root")
            return {"op": op, "path": "/".join(parts), **ops[op]((*root_key, *parts), input)}
        except SandboxPathError as exc:
            raise ToolError(f"fs {op} refused: {exc}.") from None
        except FileNotFoundError:
            raise ToolError(f"fs {op}: nothing at {path!r}.") from None
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ToolError(f"fs {op} {path!r} failed: {reason}.") from None

    schema = op_schema({
        "op": {"type": "string", "enum": sorted(ops)},
        "path": {"type": "string", "description": "Relative to your folder, '/'-separated."},
        "content": {"type": "string", "description": "What to write (write only)."},
    })
    return define_tool(
        name,
        description=(f"Files in your own folder: op ls | read | write (with content) | rm | stat. Reads up "
                     f"to {max_read_bytes} bytes, writes up to {max_write_bytes}."),
        input_schema=schema, execute=execute, needs_approval=needs_approval,
    )


def _store(store: ObjectStore | str | os.PathLike[str] | None) -> ObjectStore:
    if store is None:
        return LocalDirStore(os.path.join(Settings().data_dir, "fs"))
    if isinstance(store, str | os.PathLike):
        return LocalDirStore(store)
    if isinstance(store, ObjectStore):
        return store
    raise InvalidToolError(f"fs_tool: store must be a directory path or an ObjectStore, not {store!r}.")


def _read(store: ObjectStore, key: tuple[str, ...], limit: int) -> dict[str, Any]:
    data = store.read(key, limit)
    try:
        return {"content": data.decode("utf-8"), "encoding": "utf-8", "bytes": len(data)}
    except UnicodeDecodeError:
        return {"content": base64.b64encode(data).decode("ascii"), "encoding": "base64", "bytes": len(data)}


def _write(store: ObjectStore, key: tuple[str, ...], input: dict[str, Any], limit: int) -> dict[str, Any]:
    content = input.get("content")
    if not isinstance(content, str):
        raise ValueError("write needs content (a string)")
    data = content.encode("utf-8")
    if len(data) > limit:
        raise ValueError(f"the content is {len(data)} bytes, over the write limit of {limit}")
    store.write(key, data)
    return {"bytes": len(data)}


def _remove(store: ObjectStore, key: tuple[str, ...]) -> dict[str, Any]:
    store.remove(key)
    return {"removed": True}


def _entry(entry: Entry) -> dict[str, Any]:
    return {"name": entry.name, "type": entry.type, "size": entry.size, "modified_ms": entry.modified_ms}
