"""Sandbox tools: ``fs_tool`` (files under a confined root in an object store) and ``container_tool``
(commands and HTTP on a sandbox service; ``reference_server`` is one).
"""

from lunora_jobs.toolbox.sandbox.container import container_tool
from lunora_jobs.toolbox.sandbox.fs import fs_tool
from lunora_jobs.toolbox.sandbox.s3 import S3Store
from lunora_jobs.toolbox.sandbox.store import Entry, LocalDirStore, ObjectStore

__all__ = ["Entry", "LocalDirStore", "ObjectStore", "S3Store", "container_tool", "fs_tool"]
