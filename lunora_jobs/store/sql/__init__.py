"""``SqlStore``: the ``AgentStore`` (and ``ActionProposalStore``) over PostgreSQL, MySQL/MariaDB and
SQLite, built on SQLAlchemy Core. One mixin per concern, each in its own private module; PostgreSQL's
single-round-trip statements live in ``_postgres``.

Example::

    from lunora_jobs.store.sql import create_store
    store = create_store("sqlite:///./.lunora/lunora.db")
"""

from lunora_jobs.store.sql._engine import create_engine
from lunora_jobs.store.sql._proposals.store import SqlProposalStore
from lunora_jobs.store.sql._store import SqlStore, create_store

__all__ = ["SqlProposalStore", "SqlStore", "create_engine", "create_store"]
