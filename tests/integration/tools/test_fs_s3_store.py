"""fs_tool over S3Store against moto's S3 server (``ThreadedMotoServer`` on 127.0.0.1, boto3 over
HTTP): the hostile-path table the local store is tested with, all refused, nothing in the bucket
touched; ops round trip inside the root; folders are implicit; size limits hold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hostile_paths import LINK_ATTACKS, PATH_ATTACKS
from suite_settings import require_module

from lunora_jobs.errors import InvalidToolError, ToolError
from lunora_jobs.toolbox import S3Store, fs_tool
from lunora_jobs.tools import ToolContext, ToolDefinition

require_module("boto3", extra="s3")
require_module("moto", extra="all-tests")

pytestmark = [pytest.mark.integration]
CTX = ToolContext(idempotency_key="tool:fs:c1", run_id="r1", thread_key="t1", owner=None, tool_call_id="c1")
BUCKET = "agent-files"
SEEDED = {"outside/secret.txt": b"top secret", "agents/other/notes.txt": b"not yours",
          "agents/coder/notes.txt": b"hello", "agents/coder/deep/inner.txt": b"deep"}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import boto3

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # moto accepts any; never real ones
        monkeypatch.setenv(name, "testing")
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    for key, body in SEEDED.items():
        client.put_object(Bucket=BUCKET, Key=key, Body=body)
    yield client
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)


def _tool(client: Any, **options: Any) -> ToolDefinition:
    return fs_tool(root="agents/coder", store=S3Store(BUCKET, client=client), **options)


def _run(tool: ToolDefinition, **input: Any) -> Any:
    tool.validate(input)
    return tool.execute(input, CTX)


def _snapshot(client: Any) -> dict[str, bytes]:
    names = [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    return {name: client.get_object(Bucket=BUCKET, Key=name)["Body"].read() for name in names}


def test_the_local_stores_hostile_table_is_refused_on_s3(bucket: Any) -> None:
    tool = _tool(bucket)
    assert len(PATH_ATTACKS) >= 20
    before = _snapshot(bucket)
    ops = (("read", {}), ("write", {"content": "pwned"}), ("rm", {}), ("stat", {}), ("ls", {}))
    for path in PATH_ATTACKS:
        for op, extra in ops:
            with pytest.raises(ToolError) as err:
                _run(tool, op=op, path=path, **extra)
            assert str(err.value).startswith(f"fs {op} refused"), (path, str(err.value))
            assert "top secret" not in str(err.value) and "not yours" not in str(err.value)
    assert _snapshot(bucket) == before


def test_link_names_are_plain_names_inside_the_root(bucket: Any) -> None:
    """S3 has no links: the local table's link names only ever name objects under the root."""
    tool = _tool(bucket, needs_approval=False)
    for path in LINK_ATTACKS:
        with pytest.raises(ToolError, match="nothing at"):
            _run(tool, op="read", path=path)
    _run(tool, op="write", path="link_out/secret.txt", content="mine")
    assert bucket.get_object(Bucket=BUCKET, Key="agents/coder/link_out/secret.txt")["Body"].read() == b"mine"
    assert bucket.get_object(Bucket=BUCKET, Key="outside/secret.txt")["Body"].read() == b"top secret"


def test_ops_round_trip_inside_the_root(bucket: Any) -> None:
    tool = _tool(bucket, max_read_bytes=64, max_write_bytes=32)
    listing = _run(tool, op="ls", path="")
    assert [(e["name"], e["type"]) for e in listing["entries"]] == [("deep", "dir"), ("notes.txt", "file")]
    assert _run(tool, op="read", path="notes.txt")["content"] == "hello"
    written = _run(tool, op="write", path="new/dir/a.txt", content="fresh")
    assert written == {"op": "write", "path": "new/dir/a.txt", "bytes": 5}
    assert _run(tool, op="stat", path="new")["type"] == "dir"
    stat = _run(tool, op="stat", path="new/dir/a.txt")
    assert (stat["type"], stat["size"]) == ("file", 5) and stat["modified_ms"] > 0
    with pytest.raises(ToolError, match="not empty"):
        _run(tool, op="rm", path="new")
    assert _run(tool, op="rm", path="new/dir/a.txt")["removed"] is True
    with pytest.raises(ToolError, match="nothing at"):
        _run(tool, op="stat", path="new")  # a folder exists while it holds objects
    with pytest.raises(ToolError, match="write limit"):
        _run(tool, op="write", path="big.txt", content="x" * 33)
    bucket.put_object(Bucket=BUCKET, Key="agents/coder/huge.bin", Body=b"y" * 65)
    with pytest.raises(ToolError, match="read limit"):
        _run(tool, op="read", path="huge.bin")
    assert _snapshot(bucket)["outside/secret.txt"] == b"top secret"


def test_a_prefix_confines_the_store_further(bucket: Any) -> None:
    tool = fs_tool(root="coder", store=S3Store(BUCKET, prefix="agents", client=bucket))
    assert _run(tool, op="read", path="deep/inner.txt")["content"] == "deep"
    with pytest.raises(InvalidToolError, match="prefix"):
        S3Store(BUCKET, prefix="../outside", client=bucket)
    with pytest.raises(InvalidToolError, match="not both"):
        S3Store(BUCKET, client=bucket, endpoint_url="http://127.0.0.1:1")


def test_the_store_builds_its_own_client_from_an_endpoint(endpoint: str, bucket: Any) -> None:
    store = S3Store(BUCKET, endpoint_url=endpoint, region_name="us-east-1")
    assert store.read(("agents", "coder", "notes.txt"), 64) == b"hello"
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
