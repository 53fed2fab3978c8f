"""``RagSettings``: every environment variable ``rag`` reads, in one pydantic-settings object.

``rag`` never reads ``os.environ`` anywhere else, and never imports ``lunora_jobs`` (whose own
``Settings`` may reuse this one, never the reverse).

| variable | field | used by |
| --- | --- | --- |
| ``LUNORA_QDRANT_URL`` | ``qdrant_url`` | ``default_store`` / ``QdrantStore()``: the Qdrant server |
| ``OPENAI_API_KEY`` | ``openai_api_key`` | ``OpenAIEmbedder`` |
| ``OPENAI_BASE_URL`` | ``openai_base_url`` | ``OpenAIEmbedder`` (any OpenAI-compatible server) |
| ``LUNORA_DATA_DIR`` | ``data_dir`` (``./.lunora``) | ``EdgeStore`` (``vectors/``), sync manifests |

Example::

    from rag.settings import RagSettings
    RagSettings().qdrant_url            # None unless LUNORA_QDRANT_URL is set
    RagSettings(data_dir="/tmp/x")      # explicit values win over the environment
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RagSettings(BaseSettings):
    """The environment ``rag`` reads; every field has the embedded default of a fresh machine."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", populate_by_name=True)

    qdrant_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LUNORA_QDRANT_URL", "qdrant_url")
    )
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url")
    )
    data_dir: Path = Field(
        default=Path(".lunora"), validation_alias=AliasChoices("LUNORA_DATA_DIR", "data_dir")
    )


def normalize_database_url(url: str) -> str:
    """Pick the drivers the project ships (psycopg 3, PyMySQL) when a URL names only the dialect.

    ``postgresql://`` would make SQLAlchemy reach for psycopg2, which is not installed.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    if url.startswith("mysql://") or url.startswith("mariadb://"):
        return "mysql+pymysql://" + url.split("://", 1)[1]
    return url


__all__ = ["RagSettings", "normalize_database_url"]
