"""Confining a model-chosen path under a root: the checks every ``fs_tool`` path passes first.

A path is refused, never repaired: NUL and other control characters, an absolute path (``/x``,
``\\\\server``, ``C:``), a backslash, a ``..`` component, a component over 255 bytes or a path over
1,024 bytes. What is left is a relative, ``/``-separated list of components (``.`` and empty
components dropped). Symlinks are the store's business: ``LocalDirStore`` walks components with
``O_NOFOLLOW`` so a link can neither be followed nor replaced mid-walk.
"""

from __future__ import annotations

import re

from lunora_jobs.errors import SandboxPathError

MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")


def confine(path: str) -> tuple[str, ...]:
    """The components of ``path`` inside the root; ``SandboxPathError`` (worded for the model) if it
    would leave it or is malformed. ``""`` and ``"."`` are the root itself (``()``)."""
    if not isinstance(path, str):
        raise SandboxPathError(f"path must be a string, got {type(path).__name__}")
    shown = repr(path[:80])
    if _CONTROL.search(path):
        raise SandboxPathError(f"the path {shown} contains a NUL or control character")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise SandboxPathError(f"the path is longer than {MAX_PATH_BYTES} bytes")
    if "\\" in path:
        raise SandboxPathError(f"the path {shown} contains a backslash; separate folders with '/'")
    if path.startswith("/") or _DRIVE.match(path):
        raise SandboxPathError(f"the path {shown} is absolute; give a path relative to the root")
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    for part in parts:
        if part == "..":
            raise SandboxPathError(f"the path {shown} goes up with '..'; paths stay under the root")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise SandboxPathError(f"a name in the path is longer than {MAX_COMPONENT_BYTES} bytes")
    return parts
