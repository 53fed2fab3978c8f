"""The operator's CLI through typer's ``CliRunner`` on the embedded default (SQLite, in-process
dispatch): run and follow, approvals, runs list/show/cancel/retry, schedules list/cancel, generate, and
errors a user can cause as one line plus the fix."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lunora_jobs.cli import app

APP_MODULE = textwrap.dedent('''
    from lunora_jobs import Lunora, Settings, ToolContext, define_agent, tool
    from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn

    @tool(needs_approval=True)
    def refund(amount: float, ctx: ToolContext) -> str:
        """Refund the customer."""
        return f"refunded {amount}"

    support = define_agent(name="support", instructions="Help.",
                           model=ScriptedModel([final_turn("hello there")]))
    billing = define_agent(name="billing", instructions="Bill.", tools=[refund], model=ScriptedModel([
        tool_call_turn("call_1", "refund", {"amount": 5}), final_turn("refund done")]))

    class Flaky:
        """Down until the file ``fixed`` exists in the working directory."""
        name = "flaky"

        def generate(self, messages, **options):
            import os
            if not os.path.exists("fixed"):
                raise TimeoutError("model down")
            return final_turn("recovered")

    flaky = define_agent(name="flaky", instructions="Try.", model=Flaky(), retry={"max_attempts": 1})

    def app():
        return Lunora.from_env(agents=[support, billing, flaky], settings=Settings(scheduler_thread=False))
''')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module = f"cliapp_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(APP_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("LUNORA_APP", f"{module}:app")
    monkeypatch.setenv("LUNORA_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop(module, None)


def lunora(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and " — fix: " in lines[0] and "--debug" in lines[0], result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_run_follow_prints_the_conversation(project: Path) -> None:
    result = lunora("run", "support", "hi", "--thread", "t-1", "--owner", "u7", "--follow")
    assert result.exit_code == 0, result.output
    assert "user: hi" in result.stdout and "assistant: hello there" in result.stdout

    as_json = lunora("run", "support", "again", "--json")
    assert as_json.exit_code == 0, as_json.output
    row = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert row["status"] == "completed" and row["thread_key"].startswith("thread-")


def test_an_approval_from_follow_to_approve_to_the_step_timeline(project: Path) -> None:
    waiting = lunora("run", "billing", "refund me", "--thread", "t-b", "--follow")
    assert waiting.exit_code == 0, waiting.output
    assert "→ refund(" in waiting.stdout and "[call_1]" in waiting.stdout
    assert "lunora approve t-b call_1" in waiting.stdout

    approved = lunora("approve", "t-b", "call_1")
    assert approved.exit_code == 0 and "approved call_1 on thread t-b" in approved.stdout, approved.output
    again = lunora("approve", "t-b", "call_1")
    assert again.exit_code == 0 and "already approved" in again.stdout, again.output

    runs = [json.loads(line) for line in lunora("runs", "list", "--json").stdout.splitlines()]
    (run,) = [r for r in runs if r["thread"] == "t-b"]
    assert run["status"] == "completed" and run["agent"] == "billing"
    shown = lunora("runs", "show", run["id"], "--json")
    steps = [s["step"] for s in json.loads(shown.stdout)["steps"]]
    assert steps[0] == "llm:turn:0" and "tool:refund:call_1" in steps and steps[-1] == "llm:turn:1"
    table = lunora("runs", "show", run["id"])
    assert "step timeline" in table.stdout and "tool:refund:call_1" in table.stdout


def test_runs_cancel(project: Path) -> None:
    lunora("run", "billing", "refund me", "--thread", "t-c")  # waits for its approval
    listed = lunora("runs", "list", "--json", "--status", "awaiting_input").stdout
    (run,) = [json.loads(line) for line in listed.splitlines()]
    cancelled = lunora("runs", "cancel", run["id"])
    assert cancelled.exit_code == 0 and f"cancelled run {run['id']}" in cancelled.stdout, cancelled.output
    twice = lunora("runs", "cancel", run["id"])
    assert "already ended (cancelled)" in twice.stdout


def test_runs_retry_resumes_a_failed_run(project: Path) -> None:
    assert lunora("run", "flaky", "try", "--thread", "t-f").exit_code == 1  # the run failed
    listed = lunora("runs", "list", "--json", "--status", "failed").stdout
    (run,) = [json.loads(line) for line in listed.splitlines()]
    _one_line_error(lunora("runs", "retry", "nope"), "no run 'nope'", "lunora runs list")
    (project / "fixed").write_text("")
    retried = lunora("runs", "retry", run["id"])
    assert retried.exit_code == 0, retried.output
    assert f"retrying run {run['id']}: fresh attempts for llm:turn:0" in retried.stdout
    shown = json.loads(lunora("runs", "show", run["id"], "--json").stdout)
    assert shown["status"] == "completed" and shown["error"] is None
    _one_line_error(lunora("runs", "retry", run["id"]), "is completed, not failed", "lunora runs show")


def test_schedules_list_and_cancel(project: Path) -> None:
    from lunora_jobs.runtime.app import load_app

    scheduled = load_app()
    sid = scheduled.scheduler.run_after(3600, "support", {"input": "later", "thread_key": "t-later"})
    listed = [json.loads(line) for line in lunora("schedules", "list", "--json").stdout.splitlines()]
    assert [(s["id"], s["status"], s["kind"], s["agent"]) for s in listed] == [
        (sid, "pending", "once", "support")]
    assert sid in lunora("schedules", "list").stdout

    cancelled = lunora("schedules", "cancel", sid)
    assert cancelled.exit_code == 0 and f"cancelled {sid}" in cancelled.stdout, cancelled.output
    _one_line_error(lunora("schedules", "cancel", sid), "is cancelled, not pending")
    _one_line_error(lunora("schedules", "cancel", "nope"), "no schedule 'nope'", "lunora schedules list")


def test_errors_a_user_can_cause_are_one_line_and_the_fix(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgraded = lunora("db", "upgrade")
    assert upgraded.exit_code == 0 and "upgraded from an empty database" in upgraded.stdout, upgraded.output
    _one_line_error(lunora("runs", "show", "nope"), "no run 'nope'", "lunora runs list")
    _one_line_error(lunora("runs", "list", "--url", "not a url"), "LUNORA_DATABASE_URL")
    _one_line_error(lunora("runs", "list", "--url", f"sqlite:///{project / 'empty.db'}"), "lunora db upgrade")
    _one_line_error(lunora("run", "nobody", "hi"), "no agent named 'nobody'", "support")
    _one_line_error(lunora("runs", "list", "--url", "postgresql+nosuchdriver://x/y"))
    monkeypatch.delenv("LUNORA_APP")
    _one_line_error(lunora("run", "support", "hi"), "LUNORA_APP")
    debug = lunora("runs", "show", "nope", "--debug")
    assert debug.exit_code == 1 and debug.exception is not None  # --debug lets the error through


def test_generate_agent_writes_a_new_module_and_never_overwrites(project: Path) -> None:
    made = lunora("generate", "agent", "billing2", "--dir", "pkg")
    assert made.exit_code == 0, made.output
    assert "from pkg.billing2_agent import billing2" in made.stdout
    target = project / "pkg" / "billing2_agent.py"
    namespace: dict[str, object] = {}
    exec(compile(target.read_text(), str(target), "exec"), namespace)  # the skeleton is valid and defines it
    assert getattr(namespace["billing2"], "name", None) == "billing2"
    before = target.read_text()
    _one_line_error(lunora("generate", "agent", "billing2", "--dir", "pkg"), "already exists")
    assert target.read_text() == before
    _one_line_error(lunora("generate", "agent", "not-a-name"), "not a Python identifier")


@pytest.mark.parametrize("command", [
    ["run"], ["runs", "list"], ["runs", "show"], ["runs", "cancel"], ["approve"], ["schedules", "list"],
    ["schedules", "cancel"], ["generate", "agent"], ["db", "upgrade"], ["db", "current"], ["doctor"],
])
def test_every_operator_command_documents_an_example(command: list[str]) -> None:
    result = lunora(*command, "--help")
    assert result.exit_code == 0 and "Example: " in result.stdout, result.output
