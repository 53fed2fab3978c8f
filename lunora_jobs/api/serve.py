"""``lunora api``: serve the app named by ``LUNORA_APP`` under uvicorn.

Uvicorn imports ``app_from_env`` (a factory) in each of its worker processes, so ``--workers N``
runs N API processes; their live streams meet through Redis pub/sub.
"""

from __future__ import annotations

from fastapi import FastAPI

from lunora_jobs.api.app import create_app
from lunora_jobs.api.auth.from_settings import authenticator_from_settings
from lunora_jobs.config import Settings
from lunora_jobs.runtime import load_app


def app_from_env() -> FastAPI:
    """The API app for ``LUNORA_APP`` with the settings' authenticator, CORS origins, heartbeat and resync."""
    settings = Settings()
    authenticator = authenticator_from_settings(settings)  # fail closed before loading anything else
    lunora = load_app(settings.app)
    origins = [o for o in (settings.api_cors_origins or "").split(",") if o.strip()]
    return create_app(lunora, authenticator, cors_origins=origins, heartbeat_s=settings.api_heartbeat_s,
                      poll_s=settings.api_resync_s)


def serve(host: str = "127.0.0.1", port: int = 8000, workers: int = 1, log_level: str = "info") -> None:
    """Run uvicorn (checks the configuration first, so a mistake is one line, not a traceback per worker)."""
    import uvicorn

    settings = Settings()
    authenticator_from_settings(settings)
    load_app(settings.app)
    uvicorn.run("lunora_jobs.api.serve:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level=log_level, proxy_headers=True, timeout_graceful_shutdown=5)
