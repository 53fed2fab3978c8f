"""Production is never silently a demo: what a worker checks before it consumes.

Outside the embedded default (``CELERY_BROKER_URL`` or ``LUNORA_DATABASE_URL`` set), a worker
refuses to start when

- an agent's model needs a key that is not set: ``model="auto"`` would quietly run the deterministic
  offline model, and ``"openai:..."`` would fail at its first turn (``MissingModelKeyError``); or
- a broker is set but no database: every worker would keep its own SQLite file
  (``MissingDatabaseUrlError``);
- ``LUNORA_APP`` cannot be imported: the worker would take every task and fail it, leaving its runs
  ``running`` for good.

``LUNORA_ALLOW_OFFLINE_MODEL=true`` says the offline model is intended (a staging fleet, a demo):
the worker starts and logs a warning naming the agents at every start. The check runs in the worker's
main process as a bootstep, before the consumer, so Kubernetes shows a crash loop with one log line
saying what to set instead of a fleet answering with canned text.

Example::

    LUNORA_APP=myproject.agents:app CELERY_BROKER_URL=redis://... lunora worker
    # CRITICAL lunora: support (model 'auto') would run the deterministic offline model: ...
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from celery import bootsteps

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError, MissingDatabaseUrlError, MissingModelKeyError

log = logging.getLogger(__name__)

EX_CONFIG = 78
"""Exit status of a worker that refused to start (sysexits' "configuration error")."""


@dataclass
class ModelCheck:
    """What the settings leave the agents' models with."""

    offline: list[str] = field(default_factory=list)
    """``agent (model 'spec')`` entries that would fall back to the offline model."""
    missing_key: list[str] = field(default_factory=list)
    """``agent (model 'spec')`` entries whose provider has no key."""


def _model_specs(agent: Any) -> Iterator[str]:
    for spec in (getattr(agent, "model", None), getattr(getattr(agent, "compaction", None), "model", None)):
        if isinstance(spec, str):  # a Model object or a factory is the user's explicit choice
            yield spec


def inspect_models(lunora_app: Any, settings: Settings) -> ModelCheck:
    """Which agents' model strings need a key the settings do not have."""
    check = ModelCheck()
    if getattr(getattr(lunora_app, "deps", None), "model_override", None) is not None:
        return check  # the test harness replaces every model
    has_openai = bool(settings.openai_api_key or settings.openai_base_url)
    for name, agent in sorted(getattr(lunora_app, "registry", {}).items()):
        for spec in _model_specs(agent):
            provider = spec.partition(":")[0]
            if provider == "auto" and not has_openai:
                check.offline.append(f"{name} (model {spec!r})")
            elif provider == "openai" and not has_openai:
                check.missing_key.append(f"{name} (model {spec!r})")
    return check


def check_production_settings(lunora_app: Any, settings: Settings) -> list[str]:
    """Raise when the worker would silently run a demo default; return the agents that run the offline
    model by ``LUNORA_ALLOW_OFFLINE_MODEL`` (empty in the embedded default, where that is the point)."""
    if settings.is_embedded():
        return []
    if settings.broker_url and not settings.database_url:
        raise MissingDatabaseUrlError(
            "CELERY_BROKER_URL is set but LUNORA_DATABASE_URL is not: every worker would keep its own "
            "SQLite file under LUNORA_DATA_DIR. Set LUNORA_DATABASE_URL to your PostgreSQL database."
        )
    check = inspect_models(lunora_app, settings)
    if check.missing_key:
        raise MissingModelKeyError(
            f"{', '.join(check.missing_key)} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            "OpenAI-compatible server), and neither is set."
        )
    if check.offline and not settings.allow_offline_model:
        raise MissingModelKeyError(
            f"{', '.join(check.offline)} would run the deterministic offline model: neither "
            "OPENAI_API_KEY nor OPENAI_BASE_URL is set. Set one, or LUNORA_ALLOW_OFFLINE_MODEL=true "
            "if the offline model is what you want."
        )
    return check.offline


def preflight_step(load_app: Callable[[], Any]) -> type[bootsteps.StartStopStep]:
    """A worker bootstep running :func:`check_production_settings` on the app ``load_app`` returns."""

    class ProductionPreflight(bootsteps.StartStopStep):  # type: ignore[misc]
        """Refuse to consume when the worker would silently run a demo default."""

        def start(self, worker: Any) -> None:
            settings = Settings()
            if not settings.app or settings.is_embedded():
                return
            try:
                lunora_app = load_app()
            except Exception as exc:  # a worker that takes tasks only to fail them all must not start
                log.critical("lunora: cannot load LUNORA_APP=%r: %s: %s. Fix the import path "
                             "(module:attribute) or the error it raises; the worker does not start.",
                             settings.app, type(exc).__name__, exc)
                raise SystemExit(EX_CONFIG) from exc
            try:
                offline = check_production_settings(lunora_app, settings)
            except ConfigurationError as exc:
                log.critical("lunora: %s", exc)
                raise SystemExit(EX_CONFIG) from exc
            if offline:
                log.warning(
                    "lunora: LUNORA_ALLOW_OFFLINE_MODEL is set: %s run the deterministic OFFLINE model, "
                    "not a language model. Unset it and set OPENAI_API_KEY for real answers.",
                    ", ".join(offline),
                )

    return ProductionPreflight
