"""``lunora threads erase`` through typer's ``CliRunner`` against a SQLite database: the counts, --json,
and the errors a user can cause (no such thread, an open run, a declined prompt) as one line + the fix."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lunora_jobs.cli import app
from lunora_jobs.store import SqlStore
from lunora_jobs.store.records import NewMessage, NewRun


def _db(tmp_path: Path) -> tuple[str, SqlStore]:
    url = f"sqlite:///{tmp_path / 'erase.db'}"
    store = SqlStore.from_url(url)
    for key in ("t-1", "t-2"):
        thread = store.ensure_thread(key, owner="alice")
        store.append_message(thread.id, NewMessage(key=f"{key}:user:0", role="user", content="hi"))
        store.create_run(NewRun(id=f"run-{key}", thread_id=thread.id, agent="a", input="hi"))
    return url, store


def test_erase_prints_what_it_deleted(tmp_path: Path) -> None:
    url, store = _db(tmp_path)
    result = CliRunner().invoke(app, ["threads", "erase", "t-1", "--yes", "--url", url])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "erased thread t-1: 1 agent_messages, 1 agent_runs, 1 agent_threads"
    assert store.get_thread("t-1") is None and store.get_thread("t-2") is not None

    result = CliRunner().invoke(app, ["threads", "erase", "t-2", "--yes", "--json", "--url", url])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["thread"] == "t-2" and doc["deleted"]["agent_messages"] == 1


def test_erase_errors_are_one_line_with_the_fix(tmp_path: Path) -> None:
    url, store = _db(tmp_path)
    missing = CliRunner().invoke(app, ["threads", "erase", "nope", "--yes", "--url", url])
    assert missing.exit_code == 1
    assert missing.output.count("\n") == 1
    assert "no thread 'nope'" in missing.output and "fix:" in missing.output

    thread = store.get_thread("t-1")
    assert thread is not None
    store.acquire_thread(thread.id, "run-t-1")
    busy = CliRunner().invoke(app, ["threads", "erase", "t-1", "--yes", "--url", url])
    assert busy.exit_code == 1 and busy.output.count("\n") == 1
    assert "open run 'run-t-1'" in busy.output and "cancel the run first" in busy.output

    declined = CliRunner().invoke(app, ["threads", "erase", "t-2", "--url", url], input="n\n")
    assert declined.exit_code == 1 and store.get_thread("t-2") is not None


def test_erase_help_has_an_example() -> None:
    result = CliRunner().invoke(app, ["threads", "erase", "--help"])
    assert result.exit_code == 0 and "lunora threads erase support-42 --yes" in result.output
