"""Sandbox tools: ``fs_tool`` (files under a confined root in an object store)."""

from lunora_jobs.toolbox.sandbox.fs import fs_tool
from lunora_jobs.toolbox.sandbox.store import Entry, LocalDirStore, ObjectStore

__all__ = ["Entry", "LocalDirStore", "ObjectStore", "fs_tool"]
