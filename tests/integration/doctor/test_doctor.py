"""``lunora doctor`` against the real services: all configured parts answer (exit 0), then each one
broken in turn is named, with its fix, and the exit code is 1. Not a port probe: a wrong database
name, a missing driver, migrations behind the head, a rejected model key all fail."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ports import free_port
from suite_settings import settings
from typer.testing import CliRunner

from lunora_jobs.cli import app
from lunora_jobs.store.migrations import upgrade

pytestmark = pytest.mark.integration

KEY = "sk-doctor"
EMPTY_APP = "from lunora_jobs import Lunora\n\ndef build():\n    return Lunora.from_env()\n"
AGENT_APP = (
    "from lunora_jobs import Lunora, define_agent\n\n"
    "def build():\n"
    "    return Lunora.from_env(agents=[define_agent(name='helper', instructions='x', model='offline')])\n"
)


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ok = self.path == "/v1/models" and self.headers.get("Authorization") == f"Bearer {KEY}"
        body = json.dumps({"object": "list", "data": []} if ok else {"error": "bad key"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def healthy(pg_url: str, model_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every part configured and answering: PostgreSQL at head, Redis, RabbitMQ, a model, an app."""
    upgrade(pg_url)
    module = f"doctor_app_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(AGENT_APP)
    (tmp_path / f"{module}_empty.py").write_text(EMPTY_APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {
        "LUNORA_DATABASE_URL": pg_url, "CELERY_BROKER_URL": settings.amqp_url,
        "LUNORA_REDIS_URL": settings.redis_url, "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": KEY,
        "LUNORA_APP": f"{module}:build", "LUNORA_DATA_DIR": str(tmp_path / "data"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LUNORA_QDRANT_URL", raising=False)
    return env


def _doctor() -> tuple[int, dict[str, dict[str, object]]]:
    result = CliRunner().invoke(app, ["doctor", "--json"])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result.exit_code, {str(r["part"]): r for r in rows}


def test_every_configured_part_answers(healthy: dict[str, str]) -> None:
    code, rows = _doctor()
    assert code == 0, rows
    assert "migrations at head" in str(rows["database"]["detail"])
    assert rows["broker"]["detail"] == "AMQP handshake done" and rows["redis"]["detail"] == "PING answered"
    assert rows["app"]["detail"] == "agents: helper" and "HTTP 200" in str(rows["model"]["detail"])


def _dead() -> str:
    return f"127.0.0.1:{free_port()}"


BROKEN = {
    "not a url": ("LUNORA_DATABASE_URL", "not a url", "database", "not a database URL"),
    "no such database": ("LUNORA_DATABASE_URL", "{pg}_missing", "database", "does not answer"),
    "missing driver": ("LUNORA_DATABASE_URL", "postgresql+pg8000://postgres@127.0.0.1/test", "database",
                       "driver missing"),
    "redis broker down": ("CELERY_BROKER_URL", "redis://{dead}/0", "broker", "no PING answer"),
    "amqp broker down": ("CELERY_BROKER_URL", "amqp://guest:guest@{dead}//", "broker", "does not answer"),
    "unknown transport": ("CELERY_BROKER_URL", "pigeon://coop", "broker", "unsupported broker scheme"),
    "redis down": ("LUNORA_REDIS_URL", "redis://{dead}/0", "redis", "no PING answer"),
    "model down": ("OPENAI_BASE_URL", "http://{dead}/v1", "model", "does not answer"),
    "model rejects the key": ("OPENAI_API_KEY", "sk-wrong", "model", "rejects the key"),
    "app not importable": ("LUNORA_APP", "no_such_module:app", "app", "cannot load"),
    "app without agents": ("LUNORA_APP", "{app}_empty:build", "app", "declares no agents"),
    "qdrant down": ("LUNORA_QDRANT_URL", "http://{dead}", "qdrant", "does not answer"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_broken_part_is_named_with_its_fix(
    case: str, healthy: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    setting, value, part, detail = BROKEN[case]
    monkeypatch.setenv(setting, value.format(pg=healthy["LUNORA_DATABASE_URL"], dead=_dead(),
                                             app=healthy["LUNORA_APP"].split(":")[0]))
    code, rows = _doctor()
    assert code == 1, rows
    # The app opens the database: with the database broken it is reported as not loaded, too.
    assert [p for p, r in rows.items() if not r["ok"]] == [part, *(["app"] if part == "database" else [])]
    assert detail in str(rows[part]["detail"]) and rows[part]["fix"], rows[part]


def test_migrations_behind_the_head_fail(
    healthy: dict[str, str], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = pg_url + "_fresh"
    import sqlalchemy as sa

    admin = sa.create_engine(settings.pg_admin_url, isolation_level="AUTOCOMMIT")
    name = sa.engine.make_url(fresh).database
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        monkeypatch.setenv("LUNORA_DATABASE_URL", fresh)
        code, rows = _doctor()
        assert code == 1 and "no migrations applied" in str(rows["database"]["detail"])
        assert rows["database"]["fix"] == "run `lunora db upgrade`"
        human = CliRunner().invoke(app, ["doctor"])
        assert human.exit_code == 1 and "failed: database" in human.stdout
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
