"""The object stores ``fs_tool`` works over: the ``ObjectStore`` protocol and ``LocalDirStore``.

Keys are tuples of path components already confined by ``paths.confine`` (the root's first).
``LocalDirStore`` keeps them as files under a directory and never follows a symlink: every component
is opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a link planted in the tree
(pointing out of it, or swapped in while a call runs) makes the call fail instead of escaping.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lunora_jobs.errors import SandboxPathError

Key = tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """One name in a listing, or what ``stat`` says of a key."""

    name: str
    type: str  # "file" | "dir"
    size: int
    modified_ms: int


@runtime_checkable
class ObjectStore(Protocol):
    """What ``fs_tool`` needs of a store (a local directory, an S3-compatible bucket, ...)."""

    def list(self, key: Key) -> list[Entry]:
        """The entries directly under ``key`` (``FileNotFoundError`` if there is none)."""

    def read(self, key: Key, limit: int) -> bytes:
        """The object's bytes; ``ValueError`` when it is larger than ``limit``."""

    def write(self, key: Key, data: bytes) -> None:
        """Create or replace the object (folders on the way are created)."""

    def remove(self, key: Key) -> None:
        """Delete the object (an empty folder too); ``FileNotFoundError`` if absent."""

    def stat(self, key: Key) -> Entry:
        """What is at ``key``; ``FileNotFoundError`` if nothing."""


class LocalDirStore:
    """Objects as files under ``directory`` (created if missing)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)

    @contextmanager
    def _parent(self, key: Key, *, create: bool = False) -> Iterator[int]:
        """A descriptor of the folder holding ``key``'s last component, walked without following links."""
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in key[:-1]:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                nxt = _step(fd, part)
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def list(self, key: Key) -> list[Entry]:
        """The entries under ``key`` (the root for ``()``); symlinks are left out of a listing."""
        with self._parent((*key, ".")) as fd:
            entries = []
            with os.scandir(fd) as it:
                for item in it:
                    info = item.stat(follow_symlinks=False)
                    if stat_mod.S_ISDIR(info.st_mode) or stat_mod.S_ISREG(info.st_mode):
                        entries.append(_entry(item.name, info))
            return sorted(entries, key=lambda e: e.name)

    def read(self, key: Key, limit: int) -> bytes:
        """The file's bytes, at most ``limit`` of them (``ValueError`` past it)."""
        with self._parent(key) as parent:
            fd = _open(key[-1], os.O_RDONLY, parent)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise ValueError(f"the file is {size} bytes, over the read limit of {limit}")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"the file is over the read limit of {limit} bytes")
        return data

    def write(self, key: Key, data: bytes) -> None:
        """Replace the file's content (the last component is never followed if it is a link)."""
        with self._parent(key, create=True) as parent:
            fd = _open(key[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, parent, mode=0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)

    def remove(self, key: Key) -> None:
        """Unlink the file, or remove the empty folder."""
        with self._parent(key) as parent:
            info = os.stat(key[-1], dir_fd=parent, follow_symlinks=False)
            if stat_mod.S_ISLNK(info.st_mode):
                raise SandboxPathError(f"{'/'.join(key[1:])!r} is a symbolic link; links are not followed")
            if stat_mod.S_ISDIR(info.st_mode):
                os.rmdir(key[-1], dir_fd=parent)
            else:
                os.unlink(key[-1], dir_fd=parent)

    def stat(self, key: Key) -> Entry:
        """Type, size and modification time, of the entry itself (a link is refused)."""
        with self._parent(key) as parent:
            info = os.stat(key[-1], dir_fd=parent, follow_symlinks=False)
        if stat_mod.S_ISLNK(info.st_mode):
            raise SandboxPathError(f"{'/'.join(key[1:])!r} is a symbolic link; links are not followed")
        return _entry(key[-1], info)


def _step(fd: int, part: str) -> int:
    """The folder ``part`` inside ``fd``, refused if it is a link (``fd`` stays the caller's to close)."""
    try:
        return os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        # O_DIRECTORY | O_NOFOLLOW on a link fails with ELOOP or ENOTDIR, depending on the kernel.
        if exc.errno == errno.ELOOP or (
            exc.errno == errno.ENOTDIR
            and stat_mod.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
        ):
            raise SandboxPathError(f"{part!r} is a symbolic link; links are not followed") from None
        raise


def _open(name: str, flags: int, parent: int, mode: int = 0o644) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SandboxPathError(f"{name!r} is a symbolic link; links are not followed") from None
        raise


def _entry(name: str, info: os.stat_result) -> Entry:
    kind = "dir" if stat_mod.S_ISDIR(info.st_mode) else "file"
    return Entry(name=name, type=kind, size=0 if kind == "dir" else info.st_size,
                 modified_ms=int(info.st_mtime * 1000))


__all__: Sequence[str] = ["Entry", "Key", "LocalDirStore", "ObjectStore"]
