"""Alembic migrations of the agent tables: forward-only, built on ``lunora_jobs.store.ddl``."""
