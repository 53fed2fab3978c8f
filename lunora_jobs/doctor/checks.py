"""Each check of ``lunora doctor`` talks to its service for real, with a short timeout.

A check returns a ``Check``: the part, what is configured, whether it works, and what to do when it
does not (the fix names the setting, the command or the extra to install). Nothing here only opens a
TCP port: the database runs a query with the configured driver and has its migrations compared to the
head, Redis answers PING, the broker is reached through the transport of its URL's scheme, the app is
imported and must declare agents, and the model endpoint must answer HTTP.
"""

from __future__ import annotations

import importlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from lunora_jobs.config import Settings, normalize_database_url

TIMEOUT_S = 3.0
EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "pymysql": "mysql", "MySQLdb": "mysql"}


@dataclass(frozen=True, slots=True)
class Check:
    """One row of the report."""

    part: str
    setting: str
    ok: bool
    detail: str
    fix: str = ""


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _hide_password(url: str) -> str:
    import sqlalchemy as sa

    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def check_database(settings: Settings) -> Check:
    """A ``SELECT 1`` with the configured driver, then the migration revision against the head."""
    import sqlalchemy as sa

    configured = settings.database_url
    fix = "set LUNORA_DATABASE_URL=postgresql://user@host:5432/db (unset = SQLite under LUNORA_DATA_DIR)"
    try:
        url = normalize_database_url(configured) if configured else settings.resolved_database_url()
        shown = _hide_password(url)
        connect_args: dict[str, Any] = {}
        if url.startswith(("postgresql", "mysql")):
            connect_args["connect_timeout"] = int(TIMEOUT_S)
        engine = sa.create_engine(url, connect_args=connect_args)
    except sa.exc.ArgumentError as exc:
        return Check("database", str(configured), False, f"not a database URL: {_first_line(exc)}", fix)
    except (ModuleNotFoundError, sa.exc.NoSuchModuleError) as exc:
        return _missing_driver("database", str(configured), exc)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except ModuleNotFoundError as exc:
        return _missing_driver("database", shown, exc)
    except Exception as exc:
        return Check("database", shown, False, f"does not answer: {_first_line(exc)}",
                     "check the host, port, database name and credentials in LUNORA_DATABASE_URL")
    finally:
        engine.dispose()
    return _migrations(url, shown, embedded=not configured)


def _missing_driver(part: str, shown: str, exc: BaseException) -> Check:
    name = getattr(exc, "name", None) or _first_line(exc)
    extra = next((e for module, e in EXTRAS.items() if module in str(name)), None)
    fix = f"pip install 'lunora-jobs[{extra}]'" if extra else "install the driver the URL names"
    return Check(part, shown, False, f"driver missing: {name}", fix)


def _migrations(url: str, shown: str, *, embedded: bool) -> Check:
    from lunora_jobs.store.migrations import current, head

    at, newest = current(url), head()
    if at == newest:
        return Check("database", shown, True, f"answers; migrations at head ({newest})")
    if at is None and embedded:
        return Check("database", shown, True, "answers; embedded SQLite (tables created on first use)")
    where = "no migrations applied" if at is None else f"at revision {at}, head is {newest}"
    return Check("database", shown, False, f"answers, but {where}", "run `lunora db upgrade`")


def check_redis(part: str, url: str | None, fix: str) -> Check:
    """PING."""
    if not url:
        return Check(part, "(embedded default)", True, "not configured", fix)
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S)
        client.ping()
        client.close()
    except Exception as exc:
        return Check(part, url, False, f"no PING answer: {_first_line(exc)}", fix)
    return Check(part, url, True, "PING answered")


def check_broker(settings: Settings) -> Check:
    """Reach the broker through the transport its URL's scheme names (Redis PING, AMQP handshake)."""
    url = settings.broker_url
    fix = "set CELERY_BROKER_URL=redis://host:6379/0 or amqp://user:pass@host:5672// (unset = in-process)"
    if not url:
        return Check("broker", "(embedded default)", True, "in-process dispatch, no broker", fix)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("redis", "rediss"):
        return check_redis("broker", url, fix)
    if scheme in ("amqp", "amqps", "pyamqp"):
        kombu: Any = importlib.import_module("kombu")  # untyped; Celery's own messaging library

        try:
            with kombu.Connection(url, connect_timeout=TIMEOUT_S) as conn:
                conn.ensure_connection(max_retries=1, timeout=TIMEOUT_S)
        except Exception as exc:
            return Check("broker", url, False, f"AMQP broker does not answer: {_first_line(exc)}", fix)
        return Check("broker", url, True, "AMQP handshake done")
    return Check("broker", url, False, f"unsupported broker scheme {scheme or url!r}", fix)


def check_app(settings: Settings) -> Check:
    """Import ``LUNORA_APP`` and require at least one agent."""
    fix = "set LUNORA_APP=myproject.agents:app (a Lunora app or a factory returning one)"
    if not settings.app:
        return Check("app", "(not set)", True, "not set: only the embedded example runs", fix)
    from lunora_jobs.runtime.app import load_app

    try:
        app = load_app(settings.app)
    except Exception as exc:
        return Check("app", settings.app, False, f"cannot load: {_first_line(exc)}", fix)
    try:
        if not app.registry:
            return Check("app", settings.app, False, "declares no agents",
                         "pass your agents: Lunora.from_env(agents=[...])")
        return Check("app", settings.app, True, f"agents: {', '.join(sorted(app.registry))}")
    finally:
        app.close()


def _http(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def check_model(settings: Settings) -> Check:
    """``GET <base>/models`` on the OpenAI-compatible endpoint; a rejected key fails too."""
    fix = "set OPENAI_BASE_URL to an OpenAI-compatible endpoint and OPENAI_API_KEY (unset = offline model)"
    if not (settings.openai_api_key or settings.openai_base_url):
        return Check("model", "(offline model)", True, "deterministic offline model", fix)
    base = (settings.openai_base_url or "https://api.openai.com/v1").rstrip("/")
    headers = {"Authorization": f"Bearer {settings.openai_api_key}"} if settings.openai_api_key else {}
    try:
        status = _http(f"{base}/models", headers)
    except Exception as exc:
        return Check("model", base, False, f"does not answer: {_first_line(exc)}", fix)
    if status in (401, 403):
        return Check("model", base, False, f"answers, but rejects the key (HTTP {status})",
                     "check OPENAI_API_KEY")
    if status >= 500:
        return Check("model", base, False, f"answers with HTTP {status}", fix)
    return Check("model", base, True, f"answers (HTTP {status})")


def check_qdrant(settings: Settings) -> Check:
    """``GET <url>/readyz`` on the Qdrant server."""
    fix = "set LUNORA_QDRANT_URL=http://host:6333 (unset = Qdrant embedded under LUNORA_DATA_DIR)"
    url = settings.qdrant_url
    if not url:
        return Check("qdrant", "(embedded default)", True, "embedded", fix)
    try:
        status = _http(f"{url.rstrip('/')}/readyz", {})
    except Exception as exc:
        return Check("qdrant", url, False, f"does not answer: {_first_line(exc)}", fix)
    return Check("qdrant", url, status < 400, f"readyz: HTTP {status}", fix)


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the order the report lists them."""
    redis_fix = "set LUNORA_REDIS_URL=redis://host:6379/0 (unset = a process-local run lock)"
    database = check_database(settings)
    app = check_app(settings) if database.ok or not settings.app else Check(
        "app", settings.app, False, "not loaded: the app opens the database, which fails", database.fix)
    return [
        database, check_broker(settings), check_redis("redis", settings.redis_url, redis_fix),
        check_qdrant(settings), check_model(settings), app,
    ]
