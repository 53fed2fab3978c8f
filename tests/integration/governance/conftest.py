"""Fixtures of the governance tests: ``clock`` and ``store`` (one per backend)."""

from governance_stores import clock, store

__all__ = ["clock", "store"]
