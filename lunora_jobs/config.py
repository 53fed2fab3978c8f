"""Settings from the environment, each with the embedded default of DESIGN.md.

This is the one place the process environment is read (``tests/unit/structure`` enforces it):
the app, the workers, beat, the CLI and the model adapters all take their configuration from a
``Settings``. An empty variable counts as unset.

Example::

    from lunora_jobs.config import Settings
    settings = Settings()            # reads LUNORA_* / CELERY_BROKER_URL / OPENAI_* from the env
    settings.resolved_database_url() # sqlite:///./.lunora/lunora.db when nothing is set
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import SettingsConfigDict

# rag cannot import lunora_jobs, so the settings both read (LUNORA_QDRANT_URL, OPENAI_API_KEY,
# OPENAI_BASE_URL, LUNORA_DATA_DIR) and the URL normalizer live in rag's settings, extended here.
from rag.settings import RagSettings, normalize_database_url

__all__ = ["Settings", "StepRoute", "normalize_database_url"]


class StepRoute(BaseModel):
    """Where the steps of one kind go: a Celery queue and, optionally, a message priority (0-9).

    On Redis, priorities fold into the steps 0/3/6/9 and 0 is served first; on RabbitMQ 9 is
    served first (the queues are then declared with ``x-max-priority``).
    """

    queue: str = Field(min_length=1)
    priority: int | None = Field(default=None, ge=0, le=9)


class Settings(RagSettings):
    """Process configuration. Every field has an embedded default so a fresh machine runs offline.

    ``qdrant_url``, ``openai_api_key``, ``openai_base_url`` and ``data_dir`` come from ``RagSettings``.
    """

    model_config = SettingsConfigDict(
        env_file=None, extra="ignore", populate_by_name=True, env_ignore_empty=True
    )

    app: str | None = Field(default=None, validation_alias=AliasChoices("LUNORA_APP", "app"))
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_DATABASE_URL", "database_url")
    )
    broker_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CELERY_BROKER_URL", "broker_url")
    )
    """The Celery broker. Unset: steps run in-process and no worker is needed; a worker or beat
    started without one stops with an error (producers and workers agree: no default broker)."""
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_REDIS_URL", "redis_url")
    )
    anthropic_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "anthropic_base_url")
    )
    # -- the HTTP API (``lunora api``) -----------------------------------------------------------
    api_tokens_file: Path | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_TOKENS_FILE", "api_tokens_file")
    )
    """JSON bearer-token table: ``[{"subject": "u7", "token_sha256": "<hex>", "admin": false}, ...]``."""
    api_jwt_key: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_JWT_KEY", "api_jwt_key")
    )
    """JWT verification key: a PEM public key (RS*/ES*/EdDSA) or a shared secret (HS*)."""
    api_jwt_jwks_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_JWT_JWKS_URL", "api_jwt_jwks_url")
    )
    api_jwt_algorithms: str = Field(
        default="RS256", validation_alias=AliasChoices("LUNORA_API_JWT_ALGORITHMS", "api_jwt_algorithms")
    )
    api_jwt_issuer: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_JWT_ISSUER", "api_jwt_issuer")
    )
    api_jwt_audience: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_JWT_AUDIENCE", "api_jwt_audience")
    )
    api_jwt_admin_scope: str = Field(
        default="lunora:admin",
        validation_alias=AliasChoices("LUNORA_API_JWT_ADMIN_SCOPE", "api_jwt_admin_scope"),
    )
    api_jwt_tenant_claim: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_JWT_TENANT_CLAIM", "api_jwt_tenant_claim")
    )
    """The JWT claim naming the caller's tenant (e.g. ``tenant``); unset: JWT callers have no tenant."""
    api_cors_origins: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_API_CORS_ORIGINS", "api_cors_origins")
    )
    """Comma-separated origins allowed to call the API from a browser; unset = CORS closed."""
    api_heartbeat_s: float = Field(
        default=15.0, gt=0, validation_alias=AliasChoices("LUNORA_API_HEARTBEAT_S", "api_heartbeat_s")
    )
    api_resync_s: float = Field(
        default=30.0, gt=0, validation_alias=AliasChoices("LUNORA_API_RESYNC_S", "api_resync_s")
    )
    """How often a quiet live stream re-reads its thread anyway: the bound on the delay a lost
    pub/sub notice can cause (every write is announced; this is only the safety net)."""
    stream_deltas: bool = Field(
        default=True, validation_alias=AliasChoices("LUNORA_STREAM_DELTAS", "stream_deltas")
    )
    """Token streaming: a turn of a streaming model publishes its text deltas on the thread's live
    stream as it runs (``engine.deltas``). Off: the model is called without streaming."""
    # -- deployment (see deploy/ and helm/lunora-jobs) ----------------------------------------------
    beat_schedule: Path | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_BEAT_SCHEDULE", "beat_schedule")
    )
    """Beat's schedule file (default ``<data_dir>/celerybeat-schedule``, never the working directory)."""
    heartbeat_file: Path | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_HEARTBEAT_FILE", "heartbeat_file")
    )
    """A file the worker (and beat) touch every ``heartbeat_interval`` seconds: a liveness probe's input."""
    heartbeat_interval: float = Field(
        default=10.0, gt=0, validation_alias=AliasChoices("LUNORA_HEARTBEAT_INTERVAL", "heartbeat_interval")
    )
    step_routes: dict[str, StepRoute] = Field(
        default_factory=dict, validation_alias=AliasChoices("LUNORA_STEP_ROUTES", "step_routes")
    )
    """Step route -> queue and priority, as JSON (``{"tool": {"queue": "tools", "priority": 0}}``); the
    route is the step kind's ``route`` (``turn``, ``tool``, ``memory``, ``step``, or a registered kind's);
    a route without an entry goes to the default queue (``LUNORA_QUEUE``)."""
    allow_offline_model: bool = Field(
        default=False, validation_alias=AliasChoices("LUNORA_ALLOW_OFFLINE_MODEL", "allow_offline_model")
    )
    """Outside the embedded default, let an agent fall back to the offline model when no model key is
    set (workers otherwise refuse to start); every worker then says so loudly at start."""
    dispatcher: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_DISPATCHER", "dispatcher")
    )
    """``module:Class`` of the dispatcher used with a broker (``workers.dispatch:CeleryDispatcher``)."""
    queue: str = Field(default="lunora", validation_alias=AliasChoices("LUNORA_QUEUE", "queue"))
    """The queue every ``lunora.*`` task is routed to and a worker consumes by default."""
    visibility_timeout: int = Field(
        default=0, ge=0, validation_alias=AliasChoices("LUNORA_VISIBILITY_TIMEOUT", "visibility_timeout")
    )
    """Redis brokers: ``0`` (the default) keeps no broker copy of a delivered message (the step
    ledger's sweep recovers a message lost with its worker); ``N > 0`` turns on kombu's
    redelivery of an unacknowledged message after ``N`` seconds (then longer than the longest step)."""
    sweep_interval: float = Field(
        default=5.0, validation_alias=AliasChoices("LUNORA_SWEEP_INTERVAL", "sweep_interval")
    )
    """Seconds between beat's sweep (and due-delayed-runs) ticks."""
    scheduler_tick: float = Field(
        default=1.0, gt=0, validation_alias=AliasChoices("LUNORA_SCHEDULER_TICK", "scheduler_tick")
    )
    """Seconds between claims of due schedules (beat's ``lunora.dispatch_due``, the embedded ticker):
    a delayed run or cron fire starts within one tick of its time."""
    retention_days: float | None = Field(
        default=None, gt=0, validation_alias=AliasChoices("LUNORA_RETENTION_DAYS", "retention_days")
    )
    """Delete finished runs' step-ledger rows older than this many days (beat's ``lunora.retention``);
    unset (the default): keep them forever."""
    retention_batch: int = Field(
        default=1000, gt=0, validation_alias=AliasChoices("LUNORA_RETENTION_BATCH", "retention_batch")
    )
    """Ledger rows deleted per statement by the retention pass (at most 10 batches per tick)."""
    retention_tick: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("LUNORA_RETENTION_TICK", "retention_tick")
    )
    """Seconds between beat's retention passes (only scheduled when ``LUNORA_RETENTION_DAYS`` is set)."""
    scheduler_thread: bool = Field(
        default=True, validation_alias=AliasChoices("LUNORA_SCHEDULER_THREAD", "scheduler_thread")
    )
    """In the embedded default (in-process dispatcher), fire due schedules from a daemon thread of the
    app; False: call ``app.dispatch_due()`` yourself (tests driving a fake clock do)."""
    complete_retry_s: float = Field(
        default=30.0, ge=0, validation_alias=AliasChoices("LUNORA_COMPLETE_RETRY_S", "complete_retry_s")
    )
    """Seconds a step keeps retrying the write of its result across a database outage (a restart, a
    failover) before giving the attempt up: a completed model call is recorded, not paid again."""
    lease_s: float = Field(default=6.0, gt=0, validation_alias=AliasChoices("LUNORA_LEASE_S", "lease_s"))
    """Seconds a step's claim lasts unless renewed (the worker renews it while the step runs): a
    killed worker's step is taken over about this long after the kill (see ``engine/leases.py``)."""
    unknown_agent_s: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("LUNORA_UNKNOWN_AGENT_S", "unknown_agent_s")
    )
    """Seconds a running run may wait unclaimed while no live worker declares its agent before the
    sweep fails it with ``UnknownAgentError`` (workers declare their app's agents as they start and on
    every sweep; a declaration older than this is not live)."""
    sweep_grace_ms: int | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_SWEEP_GRACE_MS", "sweep_grace_ms")
    )
    """Runs with ledger activity more recent than this are left alone by the sweep (default: 30 s)."""
    proposal_lease_ms: int = Field(
        default=30_000, validation_alias=AliasChoices("LUNORA_PROPOSAL_LEASE_MS", "proposal_lease_ms")
    )
    """How long a worker holds an approved action proposal while it executes (renewed every third of
    it); a worker killed mid-execution loses the proposal to another one after at most this long."""
    worker_ready_file: Path | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_WORKER_READY_FILE", "worker_ready_file")
    )
    """A file the worker writes once it consumes (a readiness probe can watch it)."""
    # -- telemetry (lunora_jobs.telemetry) ------------------------------------------------------------
    otel_exporter: Literal["none", "otlp", "console"] = Field(
        default="none", validation_alias=AliasChoices("LUNORA_OTEL_EXPORTER", "otel_exporter")
    )
    """Where a worker sends the spans of agents declared with ``telemetry=otel_telemetry()``:
    ``otlp`` (OTLP over HTTP to ``otel_endpoint``), ``console`` (stdout), ``none`` (the process's own
    OpenTelemetry setup, if any, decides)."""
    otel_endpoint: str = Field(
        default="http://localhost:4318",
        validation_alias=AliasChoices("LUNORA_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "otel_endpoint"),
    )
    """The OTLP/HTTP collector's base URL (spans go to ``<endpoint>/v1/traces``)."""
    otel_service_name: str = Field(
        default="lunora-jobs",
        validation_alias=AliasChoices("LUNORA_OTEL_SERVICE_NAME", "OTEL_SERVICE_NAME", "otel_service_name"),
    )
    """``service.name`` of the spans this process exports."""
    metrics_port: int | None = Field(
        default=None, ge=1, le=65535, validation_alias=AliasChoices("LUNORA_METRICS_PORT", "metrics_port")
    )
    """A worker serves Prometheus metrics on this port (``/metrics``, the sum of its pool processes);
    unset: no metrics are collected at all."""
    metrics_address: str = Field(
        default="0.0.0.0", validation_alias=AliasChoices("LUNORA_METRICS_ADDRESS", "metrics_address")
    )
    """The address the metrics server binds (``127.0.0.1`` to keep it local)."""
    metrics_dir: Path | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_METRICS_DIR", "metrics_dir")
    )
    """Where pool processes keep their metric files (Prometheus multiprocess mode); default
    ``<data_dir>/prometheus-<pid>``; its ``*.db`` files are removed at worker start (one per worker)."""
    prometheus_multiproc_dir: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"),
    )
    """``prometheus_client``'s own variable, read when it is first imported. ``lunora worker`` sets it
    from ``metrics_dir``; a worker started as ``celery -A workers worker`` with Flower installed (its
    Celery plugin imports ``prometheus_client`` first) needs it set in the environment."""
    task_events: bool = Field(
        default=False, validation_alias=AliasChoices("LUNORA_TASK_EVENTS", "task_events")
    )
    """Workers send Celery task events from their start (``celery worker -E``), so Flower's task view
    lists every step (``lunora.turn`` / ``lunora.tool`` / ``lunora.step``, args ``(run_id, step)``). Off:
    Flower turns them on itself once it finds the worker. Each event is one publish to the broker."""
    step_log: bool = Field(default=False, validation_alias=AliasChoices("LUNORA_STEP_LOG", "step_log"))
    """Log one structured line per step (logger ``lunora.steps``, INFO): run id, step, kind, attempt,
    status, duration."""
    example_model: str = Field(
        default="gpt-4o-mini", validation_alias=AliasChoices("LUNORA_EXAMPLE_MODEL", "example_model")
    )
    """The model ``lunora example`` asks an OpenAI-compatible endpoint for."""
    # -- channels (ingress and replies) --
    slack_api_url: str = Field(
        default="https://slack.com/api/",
        validation_alias=AliasChoices("LUNORA_SLACK_API_URL", "slack_api_url"),
    )
    """Slack Web API base URL replies are posted to (a stand-in's in tests)."""
    github_api_url: str = Field(
        default="https://api.github.com",
        validation_alias=AliasChoices("LUNORA_GITHUB_API_URL", "github_api_url"),
    )
    """GitHub REST API base URL (GitHub Enterprise: ``https://<host>/api/v3``)."""
    discord_api_url: str = Field(
        default="https://discord.com/api/v10",
        validation_alias=AliasChoices("LUNORA_DISCORD_API_URL", "discord_api_url"),
    )
    """Discord API base URL interaction follow-ups go to."""
    smtp_relay: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_SMTP_RELAY", "smtp_relay")
    )
    """``host:port`` of the SMTP relay email replies are sent through."""
    email_from: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_EMAIL_FROM", "email_from")
    )
    """The ``From`` address of email replies."""
    email_authserv_id: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_EMAIL_AUTHSERV_ID", "email_authserv_id")
    )
    """The one ``Authentication-Results`` issuer the email ingress trusts (your border MTA)."""
    email_token: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_EMAIL_TOKEN", "email_token")
    )
    """Bearer token of the ingress's raw-mail endpoint (``POST /email``); unset: the endpoint is off."""
    reply_timeout_s: float = Field(
        default=15.0, gt=0, validation_alias=AliasChoices("LUNORA_REPLY_TIMEOUT_S", "reply_timeout_s")
    )
    """HTTP/SMTP timeout of one reply delivery; a delivery's lease is twice this plus 5 s."""
    ingress_max_body_bytes: int = Field(
        default=1024 * 1024, gt=0,
        validation_alias=AliasChoices("LUNORA_INGRESS_MAX_BODY_BYTES", "ingress_max_body_bytes"),
    )
    """Webhook bodies over this are refused with 413 (1 MiB)."""

    def resolved_database_url(self) -> str:
        """The database URL, or the embedded SQLite file under ``data_dir``."""
        if self.database_url:
            return normalize_database_url(self.database_url)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{(self.data_dir / 'lunora.db').as_posix()}"

    def resolved_beat_schedule(self) -> Path:
        """Where beat keeps its schedule: ``LUNORA_BEAT_SCHEDULE``, else under ``data_dir``."""
        return self.beat_schedule or self.data_dir / "celerybeat-schedule"

    def is_embedded(self) -> bool:
        """True when neither a broker nor a database is configured: the fresh-machine default."""
        return not (self.broker_url or self.database_url)

    def secret(self, env_name: str) -> str | None:
        """The value of the environment variable ``env_name`` (None when unset or empty).

        For secrets an agent names by variable (``on_inbound={"secret_env": "SLACK_SIGNING_SECRET"}``):
        read here, at use, so no other module reads the environment and nothing stores the value.
        """
        value = os.environ.get(env_name)
        return value or None

    def qdrant_path(self) -> Path:
        """Where Qdrant's local mode keeps its files when no server URL is set."""
        return self.data_dir / "qdrant"
