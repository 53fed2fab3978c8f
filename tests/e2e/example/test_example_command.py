"""The README's main command, `lunora example`, end to end: offline by default, OpenAI-compatible
when OPENAI_BASE_URL is set (against a local chat-completions server speaking the real wire format)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration" / "models"))
from openai_chat_server import chat_server, reply


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "LUNORA_DATABASE_URL",
            "CELERY_BROKER_URL",
            "LUNORA_REDIS_URL",
            "LUNORA_DATA_DIR",
        )
    }
    env.update(extra)
    return env


def _lunora(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lunora_jobs.cli", "example", *args],
        cwd=tmp_path,
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_example_runs_offline_on_sqlite_and_says_so(tmp_path: Path) -> None:
    done = _lunora(tmp_path, "What's the weather in Berlin?")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "model:    offline" in out
    assert (tmp_path / ".lunora" / "lunora.db").exists()
    assert "assistant: -> get_weather(" in out and '"city": "Berlin"' in out
    assert "tool: {" in out
    assert "status=completed stopped=final turns=2" in out
    assert "[offline model]" in out


def test_example_uses_an_openai_compatible_endpoint_when_configured(tmp_path: Path) -> None:
    with chat_server() as server:
        server.replies += [
            reply(
                tool_calls=[("call_abc", "get_weather", json.dumps({"city": "Lisbon"}))],
                finish_reason="tool_calls",
            ),
            reply(content="It is warm in Lisbon."),
        ]
        done = _lunora(
            tmp_path,
            "Weather in Lisbon?",
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="test-key",
            LUNORA_EXAMPLE_MODEL="test-model",
        )
        assert done.returncode == 0, done.stderr + done.stdout
        assert "model:    openai:test-model" in done.stdout
        assert "text: It is warm in Lisbon." in done.stdout
        first, second = server.requests
        assert first["model"] == "test-model"
        assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
        assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
        assert second["messages"][3]["tool_call_id"] == "call_abc"
        assert '"city": "Lisbon"' in second["messages"][3]["content"]
