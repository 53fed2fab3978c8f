"""Where this process's spans go: a ``TracerProvider`` built from ``Settings``.

``LUNORA_OTEL_EXPORTER=otlp`` sends spans over OTLP/HTTP to ``LUNORA_OTEL_ENDPOINT`` (or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT``) + ``/v1/traces``, batched; ``console`` prints them; ``none`` (the
default) leaves OpenTelemetry to whatever the process set up itself. The worker calls
``configure_tracing`` at start and ``flush_tracing`` before a pool process exits, so the last batch is
sent (``workers/telemetry.py``). The OTLP exporter comes with the ``otel`` extra
(``pip install 'lunora-jobs[otel]'``).
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError

log = logging.getLogger(__name__)

_configured: list[object] = []


def configure_tracing(settings: Settings | None = None) -> object | None:
    """Install the global ``TracerProvider`` the settings ask for; None when they ask for none.

    Idempotent in one process (a second call returns the first provider). Raises
    ``ConfigurationError`` naming the extra to install when the SDK or exporter is missing.
    """
    settings = settings or Settings()
    if settings.otel_exporter == "none":
        return None
    if _configured:
        return _configured[0]
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        raise ConfigurationError(
            f"LUNORA_OTEL_EXPORTER={settings.otel_exporter} needs the OpenTelemetry SDK: "
            "pip install 'lunora-jobs[otel]'"
        ) from exc
    exporter: SpanExporter
    if settings.otel_exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigurationError(
                "LUNORA_OTEL_EXPORTER=otlp needs the OTLP exporter: pip install 'lunora-jobs[otel]'"
            ) from exc
        exporter = OTLPSpanExporter(endpoint=settings.otel_endpoint.rstrip("/") + "/v1/traces")
    else:
        exporter = ConsoleSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": settings.otel_service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _configured.append(provider)
    log.info("lunora: spans go to %s (%s)", settings.otel_exporter,
             settings.otel_endpoint if settings.otel_exporter == "otlp" else "stdout")
    return provider


def flush_tracing(timeout_ms: int = 5000) -> None:
    """Send what is batched now (before a process exits); a no-op when nothing was configured."""
    for provider in _configured:
        provider.force_flush(timeout_ms)  # type: ignore[attr-defined]  # an SDK TracerProvider
