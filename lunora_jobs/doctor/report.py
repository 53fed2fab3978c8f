"""The report of ``lunora doctor``: a table for people or JSON lines for scripts; exit code 1 when a
configured part fails."""

from __future__ import annotations

import json
from dataclasses import asdict

from lunora_jobs.config import Settings
from lunora_jobs.doctor.checks import run_checks


def main(as_json: bool = False) -> int:
    """Print every check; 0 when all pass, 1 otherwise."""
    checks = run_checks(Settings())
    if as_json:
        for check in checks:
            print(json.dumps(asdict(check)))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="lunora doctor")
        for column in ("part", "setting", "status", "detail", "how to fix"):
            table.add_column(column, overflow="fold")
        for c in checks:
            status = "[green]ok[/green]" if c.ok else "[red]FAILED[/red]"
            table.add_row(c.part, c.setting, status, c.detail, "" if c.ok else c.fix)
        Console(width=200).print(table)
        failed = [c.part for c in checks if not c.ok]
        print(f"failed: {', '.join(failed)}" if failed else "all configured parts answer")
    return 0 if all(c.ok for c in checks) else 1
