"""``lunora doctor``: which settings are set, which services answer, and how to fix what does not."""

from __future__ import annotations

import socket
from urllib.parse import urlparse

from rich.console import Console
from rich.table import Table

from lunora_jobs.config import Settings

_FIXES = {
    "database": "set LUNORA_DATABASE_URL=postgresql://user@host:5432/db (unset = SQLite in LUNORA_DATA_DIR)",
    "broker": "set CELERY_BROKER_URL=redis://host:6379/0 (unset = in-process dispatch, no workers needed)",
    "redis": "set LUNORA_REDIS_URL=redis://host:6379/0 (unset = a process-local run lock)",
    "qdrant": "set LUNORA_QDRANT_URL=http://host:6333 (unset = Qdrant embedded under LUNORA_DATA_DIR)",
    "model": "set OPENAI_API_KEY and/or OPENAI_BASE_URL (unset = the deterministic offline model)",
}


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    host = parsed.hostname or "127.0.0.1"
    try:
        with socket.create_connection((host, parsed.port or default_port), timeout=1.5):
            return True
    except OSError:
        return False


def check(settings: Settings) -> list[tuple[str, str, bool, str]]:
    """Rows of (part, value, ok, how to fix) for the current settings."""
    rows: list[tuple[str, str, bool, str]] = []
    db = settings.resolved_database_url()
    db_ok = db.startswith("sqlite") or _reachable(db, 5432 if "postgres" in db else 3306)
    rows.append(("database", db, db_ok, _FIXES["database"]))
    for part, url, port in (
        ("broker", settings.broker_url, 6379),
        ("redis", settings.redis_url, 6379),
        ("qdrant", settings.qdrant_url, 6333),
    ):
        if url:
            rows.append((part, url, _reachable(url, port), _FIXES[part]))
        else:
            rows.append((part, "(embedded default)", True, _FIXES[part]))
    model = settings.openai_base_url or ("api.openai.com" if settings.openai_api_key else "(offline model)")
    rows.append(("model", model, True, _FIXES["model"]))
    return rows


def main() -> int:
    """Print the report; exit code 1 when a configured service does not answer."""
    rows = check(Settings())
    table = Table(title="lunora doctor")
    for column in ("part", "setting", "status", "how to change it"):
        table.add_column(column)
    for part, value, ok, fix in rows:
        table.add_row(part, value, "[green]ok[/green]" if ok else "[red]not answering[/red]", fix)
    Console().print(table)
    return 0 if all(ok for _, _, ok, _ in rows) else 1
