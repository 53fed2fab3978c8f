"""Settings from the environment, each with the embedded default of DESIGN.md.

Example::

    from lunora_jobs.config import Settings
    settings = Settings()            # reads LUNORA_* / CELERY_BROKER_URL / OPENAI_* from the env
    settings.resolved_database_url() # sqlite:///./.lunora/lunora.db when nothing is set
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

# rag cannot import lunora_jobs, so the settings both read (LUNORA_QDRANT_URL, OPENAI_API_KEY,
# OPENAI_BASE_URL, LUNORA_DATA_DIR) and the URL normalizer live in rag's settings, extended here.
from rag.settings import RagSettings, normalize_database_url

__all__ = ["Settings", "normalize_database_url"]


class Settings(RagSettings):
    """Process configuration. Every field has an embedded default so a fresh machine runs offline.

    ``qdrant_url``, ``openai_api_key``, ``openai_base_url`` and ``data_dir`` come from ``RagSettings``.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", populate_by_name=True)

    app: str | None = Field(default=None, validation_alias=AliasChoices("LUNORA_APP", "app"))
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_DATABASE_URL", "database_url")
    )
    broker_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CELERY_BROKER_URL", "broker_url")
    )
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_REDIS_URL", "redis_url")
    )
    def resolved_database_url(self) -> str:
        """The database URL, or the embedded SQLite file under ``data_dir``."""
        if self.database_url:
            return normalize_database_url(self.database_url)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{(self.data_dir / 'lunora.db').as_posix()}"

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
