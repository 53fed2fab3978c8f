"""``lunora governance usage|quota`` and ``lunora proposals list|show|approve|reject`` through typer's
``CliRunner`` on the embedded default (SQLite, in-process dispatch: an approval's action runs in the
command's own process)."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from lunora_jobs.cli import app

APP_MODULE = textwrap.dedent('''
    from lunora_jobs import Lunora, Quota, Settings, ToolContext, Usage, define_agent, tool
    from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn

    @tool(needs_approval=True)
    def refund(amount: float, ctx: ToolContext) -> str:
        """Refund the customer."""
        return f"refunded {amount:g}"

    billing = define_agent(name="billing", instructions="Bill.", tools=[refund],
                           action_approval_mode="independent", model=ScriptedModel([
                               tool_call_turn("call_1", "refund", {"amount": 90}, usage=Usage(300, 20)),
                               final_turn("asked for approval", usage=Usage(100, 10))]))

    def app():
        quotas = [Quota("tenant", tokens=400), Quota("actor", tokens=10_000, window=3600)]
        return Lunora.from_env(agents=[billing], settings=Settings(scheduler_thread=False), quotas=quotas)
''')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    module = f"govapp_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(APP_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("LUNORA_APP", f"{module}:app")
    monkeypatch.setenv("LUNORA_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    lunora_app = importlib.import_module(module).app()
    try:
        yield lunora_app
    finally:
        lunora_app.close()
        sys.modules.pop(module, None)


def lunora(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _lines(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _one_line_error(result: Result, needle: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " — fix: " in lines[0], result.stderr
    assert needle in lines[0], result.stderr


def test_usage_and_quota_from_the_cli(project: Any) -> None:
    project.agents.billing.run(input="refund", thread_key="t1", owner="u7", tenant="acme")
    [acme] = _lines(lunora("governance", "usage", "--by", "tenant", "--json"))
    assert (acme["key"], acme["input_tokens"], acme["output_tokens"]) == ("acme", 400, 30)
    assert acme["cost_usd"] is None  # the scripted model has no price
    table = lunora("governance", "usage", "--by", "actor")
    assert table.exit_code == 0 and "u7" in table.stdout and "430" in table.stdout, table.output
    statuses = _lines(lunora("governance", "quota", "--actor", "u7", "--tenant", "acme", "--json"))
    assert [(s["scope"], s["window"], s["tokens_used"], s["exceeded"]) for s in statuses] == [
        ("actor", 3600, 430, False), ("tenant", "day", 430, True)]
    shown = lunora("governance", "quota", "--tenant", "acme")
    assert shown.exit_code == 0 and "yes" in shown.stdout and "UTC day" in shown.stdout, shown.output
    _one_line_error(lunora("governance", "quota"), "--actor")
    _one_line_error(lunora("governance", "usage", "--by", "week"), "--by")
    _one_line_error(lunora("governance", "usage", "--since", "last tuesday"), "Not a time")


def test_proposals_from_the_cli_act_as_the_named_actor(project: Any) -> None:
    project.agents.billing.run(input="refund", thread_key="t1", owner="u7", tenant="acme")
    [proposal] = _lines(lunora("proposals", "list", "t1", "--actor", "u7", "--tenant", "acme", "--json"))
    assert (proposal["tool"], proposal["input"], proposal["status"]) == ("refund", {"amount": 90}, "pending")
    assert _lines(lunora("proposals", "list", "t1", "--actor", "u8", "--tenant", "acme", "--json")) == []
    assert _lines(lunora("proposals", "list", "t1", "--actor", "u7", "--tenant", "globex", "--json")) == []
    _one_line_error(lunora("proposals", "approve", "t1", proposal["id"], "--actor", "u8", "--tenant", "acme"),
                    "NotFoundError")
    approved = lunora("proposals", "approve", "t1", proposal["id"], "--actor", "u7", "--tenant", "acme")
    assert approved.exit_code == 0 and approved.stdout.startswith("approved "), approved.output
    again = lunora("proposals", "approve", "t1", proposal["id"], "--actor", "u7", "--tenant", "acme")
    assert "already approved" in again.stdout, again.output
    [shown] = _lines(lunora("proposals", "show", "t1", proposal["id"], "--actor", "u7", "--tenant", "acme",
                            "--json"))
    assert (shown["status"], shown["decided by"], shown["result"]) == ("succeeded", "u7", "refunded 90")
    _one_line_error(lunora("proposals", "list", "t1", "--actor", "u7", "--decision", "maybe"), "--decision")


@pytest.mark.parametrize("command", [
    ["governance", "usage"], ["governance", "quota"], ["proposals", "list"], ["proposals", "show"],
    ["proposals", "approve"], ["proposals", "reject"],
])
def test_every_command_documents_an_example(command: list[str]) -> None:
    result = lunora(*command, "--help")
    assert result.exit_code == 0 and "Example: " in result.stdout, result.output
