"""fs_tool: every path confined under its root (a table of hostile paths, all refused, nothing outside
read or touched), symlinks never followed, write/rm gated by default, size limits on read and write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hostile_paths import LINK_ATTACKS, PATH_ATTACKS

from lunora_jobs import define_agent, fs_tool
from lunora_jobs.errors import InvalidToolError, ToolError
from lunora_jobs.testing import agent_harness, final_turn, tool_call_turn
from lunora_jobs.tools import ToolContext, ToolDefinition

CTX = ToolContext(idempotency_key="tool:fs:c1", run_id="r1", thread_key="t1", owner=None, tool_call_id="c1")

HOSTILE = [*PATH_ATTACKS, *LINK_ATTACKS]


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Any]:
    store, outside = tmp_path / "store", tmp_path / "outside"
    root = store / "agents" / "coder"
    (root / "deep").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("top secret")
    (root / "notes.txt").write_text("hello")
    os.symlink(outside, root / "link_out")
    os.symlink(outside, root / "deep" / "link_out")
    os.symlink(secret, root / "secret_link")
    os.symlink("../..", root / "up")
    os.symlink(outside, store / "agents" / "evil")  # a root that is itself a link out
    tool = fs_tool(root="agents/coder", store=store, max_read_bytes=64, max_write_bytes=32)
    return {"tool": tool, "store": store, "root": root, "outside": outside, "secret": secret}


def _run(tool: ToolDefinition, **input: Any) -> Any:
    tool.validate(input)
    return tool.execute(input, CTX)


def _snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in directory.rglob("*") if p.is_file()}


def test_the_hostile_table_is_long_enough() -> None:
    assert len(HOSTILE) >= 20 and len(set(HOSTILE)) == len(HOSTILE)


@pytest.mark.parametrize("path", HOSTILE, ids=[repr(p)[:30] for p in HOSTILE])
def test_a_hostile_path_is_refused_for_every_op(sandbox: dict[str, Any], path: str) -> None:
    before = _snapshot(sandbox["outside"])
    for op, extra in (("read", {}), ("write", {"content": "pwned"}), ("rm", {}), ("stat", {}), ("ls", {})):
        with pytest.raises(ToolError) as err:
            _run(sandbox["tool"], op=op, path=path, **extra)
        message = str(err.value)
        assert message.startswith(f"fs {op}"), message
        assert "top secret" not in message
    assert _snapshot(sandbox["outside"]) == before
    assert sandbox["secret"].read_text() == "top secret"
    assert not (sandbox["store"].parent / "x").exists() and not Path("/x").exists()


def test_a_root_that_is_a_link_out_is_not_followed(sandbox: dict[str, Any]) -> None:
    evil = fs_tool(root="agents/evil", store=sandbox["store"])
    for op in ("read", "stat", "ls"):
        with pytest.raises(ToolError, match="symbolic link"):
            _run(evil, op=op, path="secret.txt")


def test_bad_roots_are_declaration_errors(tmp_path: Path) -> None:
    for root in ("", "/", "../x", "/etc", "a/../..", "a\x00"):
        with pytest.raises(InvalidToolError):
            fs_tool(root=root, store=tmp_path)


def test_ops_round_trip_inside_the_root(sandbox: dict[str, Any]) -> None:
    tool, root = sandbox["tool"], sandbox["root"]
    assert _run(tool, op="write", path="src/main.py", content="print('hi')") == {
        "op": "write", "path": "src/main.py", "bytes": 11}
    assert (root / "src" / "main.py").read_text() == "print('hi')"
    assert _run(tool, op="read", path="./src//main.py")["content"] == "print('hi')"
    listing = _run(tool, op="ls", path="")
    assert [(e["name"], e["type"]) for e in listing["entries"]] == [
        ("deep", "dir"), ("notes.txt", "file"), ("src", "dir")]  # links are left out
    assert _run(tool, op="stat", path="notes.txt")["size"] == 5
    assert _run(tool, op="rm", path="src/main.py") == {"op": "rm", "path": "src/main.py", "removed": True}
    with pytest.raises(ToolError, match=r"nothing at 'src/main\.py'"):
        _run(tool, op="read", path="src/main.py")
    (root / "blob.bin").write_bytes(b"\xff\x00\x01")
    assert _run(tool, op="read", path="blob.bin") == {
        "op": "read", "path": "blob.bin", "content": "/wAB", "encoding": "base64", "bytes": 3}


def test_size_limits_on_read_and_write(sandbox: dict[str, Any]) -> None:
    (sandbox["root"] / "big.txt").write_text("x" * 65)
    with pytest.raises(ToolError, match="65 bytes, over the read limit of 64"):
        _run(sandbox["tool"], op="read", path="big.txt")
    with pytest.raises(ToolError, match="33 bytes, over the write limit of 32"):
        _run(sandbox["tool"], op="write", path="small.txt", content="y" * 33)
    assert not (sandbox["root"] / "small.txt").exists()


def test_write_and_rm_need_approval_by_default(sandbox: dict[str, Any]) -> None:
    tool = sandbox["tool"]
    assert [tool.requires_approval({"op": op}) for op in ("ls", "read", "stat", "write", "rm")] == [
        False, False, False, True, True]
    agent = define_agent(name="coder", model="offline", tools=[tool])
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "fs", {"op": "write", "path": "plan.md", "content": "step 1"}),
        final_turn("written"),
    ])
    result = harness.run(input="write the plan", thread_key="fs-1")
    assert result.stopped is None and not (sandbox["root"] / "plan.md").exists()
    harness.resolve("fs-1", "call_1", approve=True)
    assert harness.result(result.run_id).text == "written"
    assert (sandbox["root"] / "plan.md").read_text() == "step 1"
    unattended = fs_tool(root="agents/coder", store=sandbox["store"], needs_approval=False)
    assert unattended.requires_approval({"op": "rm"}) is False


def test_a_refusal_reaches_the_model_as_the_calls_error(sandbox: dict[str, Any]) -> None:
    agent = define_agent(name="coder2", model="offline", tools=[sandbox["tool"]])
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "fs", {"op": "read", "path": "../../outside/secret.txt"}),
        final_turn("refused"),
    ])
    harness.run(input="read the secret", thread_key="fs-2")
    [tool_msg] = [m for m in harness.messages("fs-2") if m.role == "tool"]
    assert "goes up with '..'" in tool_msg.content and (tool_msg.metadata or {}).get("is_error")
