"""``S3Store``: ``fs_tool``'s objects in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, ...),
through boto3 (``pip install 'lunora-jobs[s3]'``).

A key (components already confined by ``paths.confine``, the root's first) is stored under the object
name ``<prefix>/<component>/.../<component>``. Folders are implicit, as S3 has them: a folder exists
while an object sits under it (``list`` and ``stat`` of a folder read one page of names with the
``/`` delimiter). S3 has no links, so the only way out of a root would be a name the confinement
already refuses (``..``, an absolute path, a backslash, NUL): every object this store names starts
with the root's prefix.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from lunora_jobs.errors import InvalidToolError, S3UnavailableError, SandboxPathError
from lunora_jobs.toolbox.sandbox.paths import confine
from lunora_jobs.toolbox.sandbox.store import Entry, Key

MISSING = frozenset({"404", "NoSuchKey", "NotFound"})


class S3Store:
    """Objects in ``bucket`` under ``prefix`` (e.g. ``"tenants/acme"``; default: the bucket's top).

    Pass a boto3 S3 ``client`` you built, or let the store build one from ``endpoint_url`` (MinIO, R2,
    a local test server), ``region_name`` and any other ``boto3.client("s3", ...)`` keyword (the
    credentials come from boto3's usual chain unless given). Example::

        files = fs_tool(root="agents/coder", store=S3Store("agent-files", endpoint_url="http://minio:9000"))
    """

    def __init__(
        self, bucket: str, *, prefix: str = "", client: Any = None, endpoint_url: str | None = None,
        region_name: str | None = None, **client_options: Any,
    ) -> None:
        if not isinstance(bucket, str) or not bucket:
            raise InvalidToolError(f"S3Store: bucket must be a bucket name, got {bucket!r}.")
        try:
            self.prefix: Key = confine(prefix)
        except SandboxPathError as exc:
            raise InvalidToolError(f"S3Store: prefix {prefix!r} is not usable: {exc}.") from None
        if client is None:
            try:
                import boto3
            except ImportError:
                raise S3UnavailableError(
                    "S3Store needs boto3: pip install 'lunora-jobs[s3]' (or pass client=)."
                ) from None
            client = boto3.client("s3", endpoint_url=endpoint_url, region_name=region_name, **client_options)
        elif endpoint_url or region_name or client_options:
            raise InvalidToolError("S3Store: pass either client= or the options to build one, not both.")
        self.bucket, self.client = bucket, client

    def _name(self, key: Key) -> str:
        return "/".join((*self.prefix, *key))

    def _folder(self, key: Key) -> str:
        name = self._name(key)
        return name + "/" if name else ""

    def _page(self, key: Key, limit: int = 1000) -> dict[str, Any]:
        page: dict[str, Any] = self.client.list_objects_v2(
            Bucket=self.bucket, Prefix=self._folder(key), Delimiter="/", MaxKeys=limit)
        return page

    def _head(self, key: Key) -> dict[str, Any] | None:
        try:
            head: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=self._name(key))
        except Exception as exc:
            if _code(exc) in MISSING:
                return None
            raise
        return head

    def list(self, key: Key) -> list[Entry]:
        """The objects and folders directly under ``key`` (``FileNotFoundError`` when there are none)."""
        folder = self._folder(key)
        entries: list[Entry] = []
        token: str | None = None
        while True:
            options: dict[str, Any] = {"Bucket": self.bucket, "Prefix": folder, "Delimiter": "/"}
            if token:
                options["ContinuationToken"] = token
            page = self.client.list_objects_v2(**options)
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(folder):].rstrip("/")
                entries.append(Entry(name=name, type="dir", size=0, modified_ms=0))
            for item in page.get("Contents", []):
                name = item["Key"][len(folder):]
                if name:  # a zero-byte "folder marker" some tools write is not a file
                    entries.append(Entry(name=name, type="file", size=int(item["Size"]),
                                         modified_ms=_ms(item.get("LastModified"))))
            token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
            if not token:
                break
        if not entries:
            raise FileNotFoundError(errno.ENOENT, "no such folder", self._name(key))
        return sorted(entries, key=lambda e: e.name)

    def read(self, key: Key, limit: int) -> bytes:
        """The object's bytes, at most ``limit`` of them (``ValueError`` past it)."""
        head = self._head(key)
        if head is None:
            raise FileNotFoundError(errno.ENOENT, "no such object", self._name(key))
        size = int(head.get("ContentLength", 0))
        if size > limit:
            raise ValueError(f"the file is {size} bytes, over the read limit of {limit}")
        try:  # a range read: an object replaced by a bigger one since the HEAD is still cut at the limit
            body = self.client.get_object(Bucket=self.bucket, Key=self._name(key), Range=f"bytes=0-{limit}")
        except Exception as exc:
            if _code(exc) in MISSING:
                raise FileNotFoundError(errno.ENOENT, "no such object", self._name(key)) from None
            raise
        data: bytes = body["Body"].read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"the file is over the read limit of {limit} bytes")
        return data

    def write(self, key: Key, data: bytes) -> None:
        """Create or replace the object (its folders exist as soon as it does)."""
        self.client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data)

    def remove(self, key: Key) -> None:
        """Delete the object; a folder is refused while it holds objects (``FileNotFoundError`` when
        there is nothing at ``key``)."""
        if self._head(key) is not None:
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
            return
        page = self._page(key, limit=1)
        if page.get("Contents") or page.get("CommonPrefixes"):
            raise OSError(errno.ENOTEMPTY, "Directory not empty")
        raise FileNotFoundError(errno.ENOENT, "no such object", self._name(key))

    def stat(self, key: Key) -> Entry:
        """What is at ``key``: an object, or a folder that holds objects."""
        head = self._head(key) if key else None
        if head is not None:
            return Entry(name=key[-1], type="file", size=int(head.get("ContentLength", 0)),
                         modified_ms=_ms(head.get("LastModified")))
        page = self._page(key, limit=1)
        if page.get("Contents") or page.get("CommonPrefixes"):
            return Entry(name=key[-1] if key else "", type="dir", size=0, modified_ms=0)
        raise FileNotFoundError(errno.ENOENT, "no such object", self._name(key))


def _code(exc: BaseException) -> str:
    """The S3 error code of a botocore ``ClientError`` ('' for anything else)."""
    response = getattr(exc, "response", None)
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    return str(error.get("Code", ""))


def _ms(value: Any) -> int:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else 0


__all__: Sequence[str] = ["S3Store"]
