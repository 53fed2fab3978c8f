"""``lunora generate agent NAME``: write a new module with a commented agent skeleton.

It only ever creates a new file (never rewrites existing user code) and prints the one line to add to
the app.
"""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Annotated

import typer

from lunora_jobs.commands._common import CommandError, DebugOption, guard

NAME = "generate"
group = typer.Typer(help="Scaffolding: new modules with commented skeletons.", no_args_is_help=True)

SKELETON = '''"""The {name} agent."""

from lunora_jobs import ToolContext, define_agent, tool


@tool
def lookup(query: str, ctx: ToolContext) -> str:
    """Look something up (the model reads this docstring as the tool's description)."""
    # Side effects must be idempotent: dedupe on ctx.idempotency_key (the durable step's name).
    return f"nothing found for {{query!r}}"


{name} = define_agent(
    name="{name}",
    instructions="You are the {name} agent. Answer briefly.",
    model="auto",  # openai:<model> when OPENAI_API_KEY / OPENAI_BASE_URL is set, else the offline model
    tools=[lookup],
    max_turns=8,
    # on_concurrent_run="reject",  # or "replace" / "queue": a second run on a busy thread
)
'''



@group.command("agent")
def agent(
    name: Annotated[str, typer.Argument(help="The agent's name: a Python identifier, e.g. billing.")],
    directory: Annotated[Path, typer.Option("--dir", help="Folder (package) to write NAME_agent.py into.")]
    = Path("."),
    debug: DebugOption = False,
) -> None:
    """Write DIR/NAME_agent.py with a commented agent skeleton and print the line that registers it.

    Example: lunora generate agent billing --dir myproject
    """
    with guard(debug):
        if not name.isidentifier() or keyword.iskeyword(name):
            raise CommandError(f"{name!r} is not a Python identifier",
                               "use letters, digits and _, e.g. billing")
        target = directory / f"{name}_agent.py"
        if target.exists():
            raise CommandError(f"{target} already exists",
                               "pick another name; generate never overwrites a file")
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(SKELETON.format(name=name), encoding="utf-8")
        package = () if directory.is_absolute() else directory.parts
        module = ".".join([*package, f"{name}_agent"])
        typer.echo(f"wrote {target}")
        typer.echo(f"add it to your app: from {module} import {name}  # then Lunora(agents=[..., {name}])")
